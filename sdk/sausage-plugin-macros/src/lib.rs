//! The macros of [`sausage-plugin`](https://docs.rs/sausage-plugin):
//! `#[rpc]`, `#[on_retired]`, `#[schema]`, `import!` and `#[test]`.
//!
//! Use them through `sausage_plugin`, which re-exports them and documents
//! each one with examples. The generated code refers to
//! `::sausage_plugin`, so a plugin depends on that crate only.
//!
//! Each rule that the macros enforce has a compile error that names the
//! item and says what to write:
//!
//! - a method of `#[rpc]` takes `&self`, an optional `ctx: &Ctx` and at most
//!   one params argument, and returns `Result<T>`;
//! - the params argument is a `#[schema]` struct with named fields;
//! - each method, each `#[schema]` type and each field has a doc comment;
//! - every type a method takes or returns is in the schema subset of
//!   PROTOCOL 10.2.
//!
//! # Example
//!
//! A whole plugin, with the macros through `sausage_plugin`:
//!
//! ```no_run
//! use sausage_plugin::{Result, rpc, schema};
//!
//! /// A calculator.
//! struct Calc;
//!
//! /// The params of `add`.
//! #[schema]
//! struct AddParams {
//!     /// The first number.
//!     a: i64,
//!     /// The second number.
//!     b: i64,
//! }
//!
//! #[rpc]
//! impl Calc {
//!     /// Add two numbers.
//!     fn add(&self, AddParams { a, b }: AddParams) -> Result<i64> {
//!         Ok(a + b)
//!     }
//! }
//!
//! fn main() {
//!     sausage_plugin::run(Calc); // serves calc.add on stdin and stdout
//! }
//! ```

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenStream as TokenStream2, TokenTree};
use quote::{ToTokens, quote, quote_spanned};
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{
    Attribute, Data, DeriveInput, Expr, ExprLit, FnArg, Ident, ImplItem, ImplItemFn, ItemFn, ItemImpl, Lit, LitStr,
    Meta, ReturnType, Type,
};

mod subset;
use subset::{Outside, first_type_argument, outside_subset, written};

/// Makes an `impl` block an interface. See `sausage_plugin::rpc`.
///
/// # Example
///
/// ```
/// use sausage_plugin::{Result, rpc, schema};
///
/// /// A greeter.
/// struct Greeter;
///
/// /// The params of `greet`.
/// #[schema]
/// struct GreetParams {
///     /// Whom to greet.
///     name: String,
/// }
///
/// #[rpc(grace_seconds = 5)]
/// impl Greeter {
///     /// Greet someone.
///     fn greet(&self, GreetParams { name }: GreetParams) -> Result<String> {
///         Ok(format!("hello, {name}"))
///     }
/// }
///
/// assert_eq!(Greeter.greet(GreetParams { name: "Ada".into() }).unwrap(), "hello, Ada");
/// ```
#[proc_macro_attribute]
pub fn rpc(attr: TokenStream, item: TokenStream) -> TokenStream {
    match rpc_impl(attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Marks the method that answers `rpc.retired`. See `sausage_plugin::on_retired`.
///
/// # Example
///
/// ```
/// use sausage_plugin::{Result, Retired, on_retired, rpc};
///
/// /// A plugin that migrates its state after an upgrade.
/// struct Notes;
///
/// #[rpc]
/// impl Notes {
///     /// Count the notes.
///     fn count(&self) -> Result<u64> {
///         Ok(0)
///     }
///
///     /// Move the notes of the old format to the new one.
///     #[on_retired]
///     fn migrate(&self, Retired { previous }: Retired) -> Result<String> {
///         Ok(format!("migrated from {previous}"))
///     }
/// }
///
/// let retired = Retired { previous: "ab12".into() };
/// assert_eq!(Notes.migrate(retired).unwrap(), "migrated from ab12");
/// ```
#[proc_macro_attribute]
pub fn on_retired(attr: TokenStream, item: TokenStream) -> TokenStream {
    if attr.to_string() == "__inside_rpc" {
        return item;
    }
    let item: TokenStream2 = item.into();
    let error = syn::Error::new(
        Span::call_site(),
        "#[on_retired] marks a method inside an #[rpc] impl: put it on a method of the main interface's #[rpc] impl",
    );
    let mut out = error.to_compile_error();
    out.extend(item);
    out.into()
}

/// The serde and schemars derives, and the schema-subset checks. See `sausage_plugin::schema`.
///
/// # Example
///
/// ```
/// use sausage_plugin::schema;
///
/// /// A note.
/// #[schema]
/// struct Note {
///     /// The text.
///     text: String,
///     /// How urgent it is.
///     priority: Option<Priority>,
/// }
///
/// /// How urgent a note is.
/// #[schema]
/// #[serde(rename_all = "lowercase")]
/// enum Priority {
///     /// Soon.
///     High,
///     /// Some time.
///     Low,
/// }
///
/// let json = sausage_plugin::serde_json::json!({"text": "milk", "priority": "high"});
/// let note: Note = sausage_plugin::serde_json::from_value(json).unwrap();
/// assert_eq!(note.priority, Some(Priority::High));
/// ```
#[proc_macro_attribute]
pub fn schema(attr: TokenStream, item: TokenStream) -> TokenStream {
    match schema_impl(attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Generates `mod <name>` from `imports/<name>.json`. See `sausage_plugin::import`.
///
/// The module is exactly the code that `sausage_plugin_codegen::generate`
/// makes of the file, which the host also shows as
/// `/proc/core/plugins/<name>/client.rs`.
///
/// # Example
///
/// With the document of the example `notes` in `imports/notes.json` (the
/// calls need a world to run):
///
/// ```no_run
/// sausage_plugin::import!("notes"); // imports/notes.json
///
/// /// Add a note, and return all notes.
/// async fn add_and_list(text: &str) -> sausage_plugin::Result<Vec<String>> {
///     let added = notes::add(notes::AddParams { text: text.into() }).await?;
///     eprintln!("{} notes", added.count);
///     notes::list().await
/// }
/// ```
#[proc_macro]
pub fn import(input: TokenStream) -> TokenStream {
    match import_impl(input.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// An async test. See `sausage_plugin::test`.
///
/// # Example
///
/// ```
/// #[sausage_plugin::test]
/// async fn a_free_lock_can_be_taken_at_once() {
///     let guard = sausage_plugin::lock("/state/x").try_now().await.unwrap();
///     assert!(guard.is_some());
/// }
/// ```
#[proc_macro_attribute]
pub fn test(attr: TokenStream, item: TokenStream) -> TokenStream {
    match test_impl(attr.into(), item.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

// ---------------------------------------------------------------------------
// docs

/// The doc comment of an item, with one leading space removed per line;
/// `None` when there is none or it is blank.
fn docs(attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let Meta::NameValue(nv) = &attr.meta
            && let Expr::Lit(ExprLit { lit: Lit::Str(s), .. }) = &nv.value
        {
            let value = s.value();
            for line in value.split('\n') {
                lines.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
            }
        }
    }
    let text = lines.join("\n").trim().to_owned();
    if text.is_empty() { None } else { Some(text) }
}

/// The source file the macro was called in, parsed: an attribute macro sees
/// only its own item, but the crate docs and the docs of the interface's
/// struct are part of the interface too. `None` when rustc does not say
/// (a remapped path) or the file cannot be read: then [`crate_root`].
fn calling_file() -> Option<syn::File> {
    let path = proc_macro::Span::call_site().local_file()?;
    syn::parse_file(&std::fs::read_to_string(path).ok()?).ok()
}

/// The root of the target being compiled, found the way cargo finds it: a
/// binary's `src/bin/<name>.rs`, `src/bin/<name>/main.rs` or `src/main.rs`,
/// else the library's `src/lib.rs`.
fn crate_root() -> Option<syn::File> {
    let dir = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").ok()?);
    let candidates = match std::env::var("CARGO_BIN_NAME") {
        Ok(bin) => {
            let mut files = vec![format!("src/bin/{bin}.rs"), format!("src/bin/{bin}/main.rs")];
            // the default binary has the package's name
            let default = std::env::var("CARGO_PKG_NAME").is_ok_and(|p| p.replace('-', "_") == bin.replace('-', "_"));
            if default { files.insert(0, "src/main.rs".to_owned()) }
            files
        }
        Err(_) => vec!["src/lib.rs".to_owned(), "src/main.rs".to_owned()],
    };
    candidates.iter().find_map(|file| syn::parse_file(&std::fs::read_to_string(dir.join(file)).ok()?).ok())
}

/// What documents the interface `name` in a file (also in its inline
/// modules): `Some(docs)` when its struct or its `#[rpc]` impl is there,
/// with the docs of either (the impl's first); `None` when neither is.
fn interface_docs(items: &[syn::Item], name: &str) -> Option<Option<String>> {
    let mut found = false;
    let mut doc = None;
    for item in items {
        match item {
            syn::Item::Impl(imp) if imp.trait_.is_none() && imp.attrs.iter().any(|a| is_attr(a, "rpc")) => {
                if matches!(&*imp.self_ty, Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == name)) {
                    found = true;
                    doc = docs(&imp.attrs).or(doc);
                }
            }
            syn::Item::Struct(s) if s.ident == name => {
                found = true;
                doc = doc.or_else(|| docs(&s.attrs));
            }
            syn::Item::Mod(m) => {
                if let Some(inner) = m.content.as_ref().and_then(|(_, items)| interface_docs(items, name)) {
                    found = true;
                    doc = doc.or(inner);
                }
            }
            _ => {}
        }
    }
    found.then_some(doc)
}

/// The docs of the struct or enum `name` in a file, also in its inline modules.
fn type_docs(items: &[syn::Item], name: &str) -> Option<String> {
    items.iter().find_map(|item| match item {
        syn::Item::Struct(s) if s.ident == name => docs(&s.attrs),
        syn::Item::Enum(e) if e.ident == name => docs(&e.attrs),
        syn::Item::Mod(m) => m.content.as_ref().and_then(|(_, items)| type_docs(items, name)),
        _ => None,
    })
}

// ---------------------------------------------------------------------------
// #[rpc]

struct RpcArgs {
    endpoints: Vec<(String, Type)>,
    grace_seconds: Option<u64>,
}

fn parse_rpc_args(attr: TokenStream2) -> syn::Result<RpcArgs> {
    let mut args = RpcArgs { endpoints: Vec::new(), grace_seconds: None };
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("endpoints") {
            meta.parse_nested_meta(|endpoint| {
                let Some(name) = endpoint.path.get_ident() else {
                    return Err(
                        endpoint.error("an endpoint name is one word, for example endpoints(control = Control)")
                    );
                };
                let name = name.to_string();
                if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
                    return Err(endpoint.error(format!(
                        "the endpoint name `{name}` must use a-z, 0-9 and _, for example endpoints(control = Control)"
                    )));
                }
                let ty: Type = endpoint.value()?.parse()?;
                if args.endpoints.iter().any(|(n, _)| *n == name) {
                    return Err(endpoint.error(format!("the endpoint `{name}` is declared twice")));
                }
                args.endpoints.push((name, ty));
                Ok(())
            })
        } else if meta.path.is_ident("grace_seconds") {
            let value: syn::LitInt = meta.value()?.parse()?;
            args.grace_seconds = Some(value.base10_parse()?);
            Ok(())
        } else {
            Err(meta.error(
                "unknown #[rpc] option: write #[rpc], #[rpc(endpoints(name = Type))] or #[rpc(grace_seconds = N)]",
            ))
        }
    });
    parser.parse2(attr)?;
    Ok(args)
}

enum Arg {
    Ctx,
    Params(Box<Type>),
}

struct Method {
    ident: Ident,
    name: String,
    doc: String,
    is_async: bool,
    args: Vec<Arg>,
    ret: Type,
}

impl Method {
    fn params(&self) -> Option<&Type> {
        self.args.iter().find_map(|a| match a {
            Arg::Params(ty) => Some(&**ty),
            Arg::Ctx => None,
        })
    }
}

fn is_ctx(ty: &Type) -> bool {
    let inner = match ty {
        Type::Reference(r) => &*r.elem,
        other => other,
    };
    matches!(inner, Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Ctx"))
}

/// A method of an `#[rpc]` impl, and the error of a missing doc comment
/// (the method is still generated, so that no other error follows).
fn analyze_method(f: &ImplItemFn, retired: bool) -> syn::Result<(Method, Option<syn::Error>)> {
    let sig = &f.sig;
    let name = sig.ident.to_string();
    let what = if retired { format!("the #[on_retired] method `{name}`") } else { format!("the method `{name}`") };
    if let Some(c) = &sig.constness {
        return Err(syn::Error::new(c.span(), format!("{what} cannot be `const` in an #[rpc] impl")));
    }
    if let Some(u) = &sig.unsafety {
        return Err(syn::Error::new(u.span(), format!("{what} cannot be `unsafe` in an #[rpc] impl")));
    }
    if sig.abi.is_some() || sig.variadic.is_some() {
        return Err(syn::Error::new(sig.span(), format!("{what} must be a plain Rust method")));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return Err(syn::Error::new(
            sig.generics.span(),
            format!("{what} cannot be generic: a JSON-RPC method has one params type and one result type"),
        ));
    }
    let mut inputs = sig.inputs.iter();
    match inputs.next() {
        Some(FnArg::Receiver(r)) if r.reference.is_some() && r.mutability.is_none() && r.colon_token.is_none() => {}
        Some(FnArg::Receiver(r)) => {
            let written = match (&r.reference, &r.mutability, &r.colon_token) {
                (_, _, Some(_)) => format!("self: {}", r.ty.to_token_stream()),
                (Some(_), Some(_), None) => "&mut self".to_owned(),
                (None, Some(_), None) => "mut self".to_owned(),
                _ => "self".to_owned(),
            };
            return Err(syn::Error::new(
                r.span(),
                format!(
                    "{what} must take `&self`, not `{written}`: each call runs in a fresh process, so there is no state to mutate or consume"
                ),
            ));
        }
        _ => {
            return Err(syn::Error::new(
                sig.ident.span(),
                format!(
                    "{what} must take `&self`: write `fn {name}(&self, ...)`; helper functions without `self` go in another impl block"
                ),
            ));
        }
    }
    let mut args = Vec::new();
    for input in inputs {
        let FnArg::Typed(pat_type) = input else { continue };
        let ty = &*pat_type.ty;
        if is_ctx(ty) {
            match ty {
                Type::Reference(r) if r.mutability.is_none() => {}
                _ => {
                    return Err(syn::Error::new(
                        ty.span(),
                        format!("{what} takes the context by reference: write `ctx: &Ctx`"),
                    ));
                }
            }
            if args.iter().any(|a| matches!(a, Arg::Ctx)) {
                return Err(syn::Error::new(ty.span(), format!("{what} takes `ctx: &Ctx` twice: once is enough")));
            }
            args.push(Arg::Ctx);
            continue;
        }
        if let Type::Reference(_) = ty {
            return Err(syn::Error::new(
                ty.span(),
                format!("{what} takes its params by value: write `params: {}` without `&`", strip_ref(ty)),
            ));
        }
        if args.iter().any(|a| matches!(a, Arg::Params(_))) {
            return Err(syn::Error::new(
                pat_type.span(),
                format!(
                    "{what} takes at most one params argument: put all params as fields of one #[schema] struct, \
                     for example `{name_camel}Params`",
                    name_camel = camel(&name)
                ),
            ));
        }
        args.push(Arg::Params(Box::new(ty.clone())));
    }
    let doc = docs(&f.attrs);
    let missing_doc = (doc.is_none() && !retired).then(|| {
        syn::Error::new(
            sig.ident.span(),
            format!(
                "{what} has no doc comment: other agents read it to use the interface. \
                 Write `/// What {name} does.` above it (the first paragraph is the summary in rpc.discover)"
            ),
        )
    });
    let ret = match &sig.output {
        ReturnType::Type(_, ty) => (**ty).clone(),
        ReturnType::Default => {
            return Err(syn::Error::new(
                sig.ident.span(),
                format!("{what} returns nothing: return `Result<T>`, for example `fn {name}(&self) -> Result<()>`"),
            ));
        }
    };
    if !is_result(&ret) {
        let written = ret.to_token_stream().to_string();
        return Err(syn::Error::new(
            ret.span(),
            format!(
                "{what} returns `{written}`: return `Result<{written}>` (sausage_plugin::Result), \
                 so that the method can answer with an error"
            ),
        ));
    }
    Ok((
        Method {
            ident: sig.ident.clone(),
            name,
            doc: doc.unwrap_or_default(),
            is_async: sig.asyncness.is_some(),
            args,
            ret,
        },
        missing_doc,
    ))
}

/// The error of a method whose result type is written with a type outside
/// the schema subset (others are caught by the `MethodResult` bound).
fn result_outside_subset(method: &Method) -> Option<syn::Error> {
    let Type::Path(p) = &method.ret else { return None };
    let ok = first_type_argument(&p.path.segments.last()?.arguments)?;
    let outside = outside_subset(ok)?;
    Some(outside_error(&format!("the method `{}` returns", method.name), &written(ok), outside))
}

/// "`subject` `written`, which is outside the subset: advice", underlining
/// the part that is outside.
fn outside_error(subject: &str, written: &str, Outside { found, tokens, advice }: Outside) -> syn::Error {
    let which = if found == written { "which".to_owned() } else { format!("and `{found}`") };
    syn::Error::new_spanned(
        tokens,
        format!("{subject} `{written}`, {which} is outside the schema subset of PROTOCOL 10.2: {advice}"),
    )
}

/// Whether a return type is written as a `Result<...>` (any path whose last
/// segment is `Result` with type arguments, such as `io::Result<T>`).
fn is_result(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Result" && matches!(s.arguments, syn::PathArguments::AngleBracketed(_))),
        Type::Group(g) => is_result(&g.elem),
        Type::Paren(p) => is_result(&p.elem),
        _ => false,
    }
}

fn strip_ref(ty: &Type) -> String {
    match ty {
        Type::Reference(r) => r.elem.to_token_stream().to_string(),
        other => other.to_token_stream().to_string(),
    }
}

fn camel(snake: &str) -> String {
    snake
        .split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}

fn is_attr(attr: &Attribute, name: &str) -> bool {
    attr.path().segments.last().is_some_and(|s| s.ident == name)
}

fn rpc_impl(attr: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    let args = match parse_rpc_args(attr) {
        Ok(args) => args,
        Err(e) => {
            let mut out = e.to_compile_error();
            out.extend(item);
            return Ok(out);
        }
    };
    let mut imp: ItemImpl = syn::parse2(item)?;
    if let Some((_, path, _)) = &imp.trait_ {
        return Err(syn::Error::new(
            path.span(),
            "#[rpc] goes on an inherent impl (`impl Type { ... }`), not on a trait impl",
        ));
    }
    if !imp.generics.params.is_empty() {
        return Err(syn::Error::new(imp.generics.span(), "#[rpc] impls cannot be generic: write `impl Type { ... }`"));
    }
    let self_ty = imp.self_ty.clone();
    let mut methods = Vec::new();
    let mut retired: Option<Method> = None;
    let mut errors: Option<syn::Error> = None;
    let mut push_error = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    for item in &mut imp.items {
        let ImplItem::Fn(f) = item else { continue };
        let is_retired = f.attrs.iter().any(|a| is_attr(a, "on_retired"));
        // `#[on_retired(__inside_rpc)]` expands to the method unchanged, and
        // the import of `on_retired` counts as used.
        for attr in &mut f.attrs {
            if is_attr(attr, "on_retired") {
                let path = attr.path().clone();
                *attr = syn::parse_quote!(#[#path(__inside_rpc)]);
            }
        }
        match analyze_method(f, is_retired) {
            Ok((method, missing_doc)) => {
                if let Some(e) = missing_doc {
                    push_error(e);
                }
                if let Some(outside) = result_outside_subset(&method) {
                    // the method is left out of the interface, so that no
                    // trait-bound error at `run` repeats this one
                    push_error(outside);
                } else if !is_retired {
                    methods.push(method);
                } else if retired.is_some() {
                    push_error(syn::Error::new(f.sig.ident.span(), "only one method can be #[on_retired]"));
                } else {
                    retired = Some(method);
                }
            }
            Err(e) => push_error(e),
        }
    }
    let errors = errors.map(|e| e.to_compile_error()).unwrap_or_default();

    let sp = quote!(::sausage_plugin);
    let names: Vec<&str> = methods.iter().map(|m| m.name.as_str()).collect();
    let mut arms = Vec::new();
    let mut describes = Vec::new();
    let mut checks = Vec::new();
    for (method, json_name) in
        methods.iter().map(|m| (m, m.name.clone())).chain(retired.iter().map(|m| (m, "rpc.retired".to_owned())))
    {
        arms.push(dispatch_arm(method, &json_name));
        let ret = &method.ret;
        checks.push(respan(quote!(#ret: #sp::MethodResult,), ret.span()));
        if let Some(params) = method.params() {
            checks.push(respan(quote!(#params: #sp::ParamsStruct,), params.span()));
        }
        if json_name == "rpc.retired" {
            continue;
        }
        let doc = &method.doc;
        let ok = quote!(<#ret as #sp::MethodResult>::Ok);
        describes.push(match method.params() {
            Some(params) => quote!(describer.method::<#params, #ok>(#json_name, #doc)),
            None => quote!(describer.method_without_params::<#ok>(#json_name, #doc)),
        });
    }
    // the crate docs are the target's root's (a binary in src/bin/ has its own); the interface's
    // struct is most likely beside its impl
    let root = crate_root();
    let here = calling_file();
    let type_name = match &*self_ty {
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default(),
        _ => String::new(),
    };
    let impl_doc = docs(&imp.attrs)
        .or_else(|| [&here, &root].into_iter().flatten().find_map(|f| type_docs(&f.items, &type_name)))
        .unwrap_or_default();
    let description = match [&root, &here].into_iter().flatten().find_map(|f| docs(&f.attrs)) {
        Some(doc) => quote!(#doc),
        None => quote!(::core::env!("CARGO_PKG_DESCRIPTION")),
    };
    let grace = match args.grace_seconds {
        Some(n) => quote!(::core::option::Option::Some(#n)),
        None => quote!(::core::option::Option::None),
    };
    let mut endpoint_errors = TokenStream2::new();
    let endpoint_infos = args.endpoints.iter().map(|(_, ty)| quote!(#sp::__private::EndpointInfo::of::<#ty>()));
    let endpoint_impls = args.endpoints.iter().map(|(name, ty)| {
        quote_spanned! {ty.span()=>
            impl #sp::Endpoint for #ty {
                const NAME: &'static str = #name;
            }
        }
    });
    // an endpoint's docs are its description: a missing one is an error, as for a method
    for (name, ty) in &args.endpoints {
        let Type::Path(p) = ty else { continue };
        let Some(ident) = p.path.segments.last().map(|s| s.ident.to_string()) else { continue };
        let found = [&here, &root].into_iter().flatten().find_map(|f| interface_docs(&f.items, &ident));
        if let Some(None) = found {
            let e = syn::Error::new(
                ty.span(),
                format!(
                    "the endpoint `{name}` has no doc comment: write /// above `struct {ident}` or above \
                     its #[rpc] impl (rpc.discover gives it as the endpoint's description)"
                ),
            );
            endpoint_errors.extend(e.to_compile_error());
        }
    }

    // The rules on types are where clauses: each broken one is one error at
    // the type, and the body is checked as if it held (no errors follow).
    Ok(quote! {
        #errors
        #endpoint_errors

        #imp

        impl #sp::Interface for #self_ty
        where
            #(#checks)*
        {
            const __METHODS: &'static [&'static str] = &[#(#names),*];
            const __DOC: &'static str = #impl_doc;

            #[allow(unused_variables, clippy::all)]
            fn __dispatch(
                self: #sp::__private::Rc<Self>,
                method: &str,
                params: #sp::__private::Value,
                ctx: #sp::Ctx,
            ) -> ::core::option::Option<#sp::__private::LocalFuture<#sp::Result<#sp::__private::Value>>> {
                match method {
                    #(#arms)*
                    _ => ::core::option::Option::None,
                }
            }

            #[allow(unused_variables, unused_mut)]
            fn __describe(describer: &mut #sp::__private::Describer) -> ::std::vec::Vec<#sp::__private::Value> {
                ::std::vec![#(#describes),*]
            }

            fn __plugin() -> #sp::__private::PluginInfo {
                #sp::__private::PluginInfo {
                    name: ::core::env!("CARGO_PKG_NAME"),
                    version: ::core::env!("CARGO_PKG_VERSION"),
                    description: #description,
                    grace_seconds: #grace,
                    endpoints: ::std::vec![#(#endpoint_infos),*],
                }
            }
        }

        #(#endpoint_impls)*
    })
}

fn dispatch_arm(method: &Method, json_name: &str) -> TokenStream2 {
    let sp = quote!(::sausage_plugin);
    let ident = &method.ident;
    let mut bindings = Vec::new();
    let mut call_args = Vec::new();
    for arg in &method.args {
        match arg {
            Arg::Ctx => call_args.push(quote!(&ctx)),
            Arg::Params(ty) => {
                bindings.push(quote_spanned! {ty.span()=>
                    let params: #ty = #sp::__private::params::<#ty>(#json_name, params)?;
                });
                call_args.push(quote!(params));
            }
        }
    }
    let call = if method.is_async {
        quote!(Self::#ident(&*self, #(#call_args),*).await)
    } else {
        quote!(Self::#ident(&*self, #(#call_args),*))
    };
    quote! {
        #json_name => ::core::option::Option::Some(::std::boxed::Box::pin(async move {
            #(#bindings)*
            #sp::__private::result(#call)
        })),
    }
}

// ---------------------------------------------------------------------------
// #[schema]

fn schema_impl(attr: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    match schema_derive(attr, item.clone()) {
        Ok(tokens) => Ok(tokens),
        // a type that cannot get the derives stays as written, beside the error
        Err(e) => {
            let mut out = e.to_compile_error();
            out.extend(item);
            Ok(out)
        }
    }
}

fn schema_derive(attr: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    let import = if attr.is_empty() {
        false
    } else {
        let ident: Ident = syn::parse2(attr.clone()).map_err(|_| {
            syn::Error::new(attr.span(), "#[schema] takes no options (generated imports use #[schema(import)])")
        })?;
        if ident != "import" {
            return Err(syn::Error::new(
                ident.span(),
                "#[schema] takes no options (generated imports use #[schema(import)])",
            ));
        }
        true
    };
    let input: DeriveInput = syn::parse2(item)?;
    let name = &input.ident;
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new(
            input.generics.span(),
            format!("#[schema] `{name}` cannot be generic: each type of an interface has one schema with one name"),
        ));
    }
    let sp = quote!(::sausage_plugin);
    let mut errors: Option<syn::Error> = None;
    let mut push_error = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    let type_doc = docs(&input.attrs);
    if type_doc.is_none() && !import {
        push_error(syn::Error::new(
            name.span(),
            format!(
                "#[schema] `{name}` has no doc comment: other agents read it to use the interface. \
                 Write `/// What a {name} is.` above it"
            ),
        ));
    }
    let existing = derived(&input.attrs);
    let wants = |t: &str| !existing.contains(t);
    let mut derives = Vec::new();
    if wants("Serialize") {
        derives.push(quote!(#sp::serde::Serialize));
    }
    if wants("Deserialize") {
        derives.push(quote!(#sp::serde::Deserialize));
    }
    if wants("Debug") {
        derives.push(quote!(::core::fmt::Debug));
    }
    if wants("Clone") {
        derives.push(quote!(::core::clone::Clone));
    }
    if wants("PartialEq") {
        derives.push(quote!(::core::cmp::PartialEq));
    }
    let allow = if import { quote!(#[allow(dead_code)]) } else { quote!() };

    match &input.data {
        Data::Struct(data) => {
            let syn::Fields::Named(fields) = &data.fields else {
                let kind = if matches!(data.fields, syn::Fields::Unit) { "a unit struct" } else { "a tuple struct" };
                return Err(syn::Error::new(
                    name.span(),
                    format!(
                        "#[schema] `{name}` is {kind}, which is outside the schema subset of PROTOCOL 10.2: \
                         use a struct with named fields, each with a doc comment"
                    ),
                ));
            };
            let mut field_checks = Vec::new();
            for field in &fields.named {
                let field_name = field.ident.as_ref().map(|i| i.to_string()).unwrap_or_default();
                if docs(&field.attrs).is_none() && !import {
                    push_error(syn::Error::new(
                        field.ident.as_ref().map(|i| i.span()).unwrap_or_else(|| field.span()),
                        format!(
                            "the field `{field_name}` of #[schema] `{name}` has no doc comment: other agents read it. \
                             Write `/// What {field_name} is.` above it"
                        ),
                    ));
                }
                // imported types are as the provider wrote them: the host's
                // interface check reports what is outside the subset
                if !import {
                    let ty = &field.ty;
                    if let Some(outside) = outside_subset(ty) {
                        let subject = format!("the field `{field_name}` of #[schema] `{name}` is");
                        push_error(outside_error(&subject, &written(ty), outside));
                    } else {
                        field_checks.push(quote_spanned!(ty.span()=> #sp::__private::assert_schema_type::<#ty>();));
                    }
                }
            }
            let errors = errors.map(|e| e.to_compile_error()).unwrap_or_default();
            if wants("JsonSchema") {
                derives.push(quote!(#sp::schemars::JsonSchema));
            }
            Ok(quote! {
                #errors

                #[derive(#(#derives),*)]
                #[serde(crate = "::sausage_plugin::serde")]
                #[schemars(crate = "::sausage_plugin::schemars")]
                #allow
                #input

                impl #sp::SchemaType for #name {}
                impl #sp::ParamsStruct for #name {}

                const _: () = {
                    #[allow(dead_code)]
                    fn __sausage_schema_checks() {
                        #(#field_checks)*
                    }
                };
            })
        }
        Data::Enum(data) => {
            let mut variants = Vec::new();
            let mut variant_docs = Vec::new();
            for variant in &data.variants {
                if !matches!(variant.fields, syn::Fields::Unit) {
                    push_error(syn::Error::new(
                        variant.ident.span(),
                        format!(
                            "the variant `{}` of #[schema] `{name}` has fields: only enums of unit variants \
                             (string enums) are in the schema subset of PROTOCOL 10.2; use a struct with an \
                             optional field per case instead",
                            variant.ident
                        ),
                    ));
                }
                let ident = &variant.ident;
                variants.push(quote!(#name::#ident));
                let rust_name = ident.to_string();
                let doc = docs(&variant.attrs).unwrap_or_default();
                variant_docs.push(quote!((#rust_name, #doc)));
            }
            if data.variants.is_empty() {
                push_error(syn::Error::new(name.span(), format!("#[schema] `{name}` has no variants")));
            }
            if let Some(errors) = errors {
                return Err(errors);
            }
            if wants("Copy") {
                derives.push(quote!(::core::marker::Copy));
            }
            if wants("Eq") {
                derives.push(quote!(::core::cmp::Eq));
            }
            if wants("Hash") {
                derives.push(quote!(::core::hash::Hash));
            }
            let doc = type_doc.unwrap_or_default();
            let name_str = name.to_string();
            let schema_impl = if existing.contains("JsonSchema") {
                quote!()
            } else {
                quote! {
                    impl #sp::schemars::JsonSchema for #name {
                        fn schema_name() -> ::std::borrow::Cow<'static, str> {
                            ::std::borrow::Cow::Borrowed(#name_str)
                        }

                        fn schema_id() -> ::std::borrow::Cow<'static, str> {
                            ::std::borrow::Cow::Borrowed(::core::concat!(::core::module_path!(), "::", #name_str))
                        }

                        fn json_schema(_: &mut #sp::schemars::SchemaGenerator) -> #sp::schemars::Schema {
                            #sp::__private::string_enum_schema(
                                ::std::vec![#(#sp::serde_json::to_value(&#variants).unwrap_or_default()),*],
                                #doc,
                                &[#(#variant_docs),*],
                            )
                        }
                    }
                }
            };
            Ok(quote! {
                #[derive(#(#derives),*)]
                #[serde(crate = "::sausage_plugin::serde")]
                #allow
                #input

                #schema_impl

                impl #sp::SchemaType for #name {}
            })
        }
        Data::Union(_) => Err(syn::Error::new(
            name.span(),
            format!("#[schema] `{name}` is a union, which is outside the schema subset of PROTOCOL 10.2"),
        )),
    }
}

/// The names of the traits already derived on an item.
fn derived(attrs: &[Attribute]) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for attr in attrs {
        if !attr.path().is_ident("derive") {
            continue;
        }
        let _ = attr.parse_nested_meta(|meta| {
            if let Some(last) = meta.path.segments.last() {
                names.insert(last.ident.to_string());
            }
            Ok(())
        });
    }
    names
}

// ---------------------------------------------------------------------------
// import!

fn import_impl(input: TokenStream2) -> syn::Result<TokenStream2> {
    let literal: LitStr = syn::parse2(input).map_err(|e| {
        syn::Error::new(e.span(), "import! takes the name of a plugin: import!(\"notes\") reads imports/notes.json")
    })?;
    let name = literal.value();
    let dir = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".to_owned());
    let path = std::path::Path::new(&dir).join("imports").join(format!("{name}.json"));
    let json = std::fs::read_to_string(&path).map_err(|e| {
        syn::Error::new(
            literal.span(),
            format!(
                "import!(\"{name}\"): cannot read imports/{name}.json ({e}). \
                 Copy /proc/core/plugins/{name}/discover.json there"
            ),
        )
    })?;
    let code = sausage_plugin_codegen::generate(&json, &name)
        .map_err(|e| syn::Error::new(literal.span(), format!("import!(\"{name}\"): {e}")))?;
    let tokens: TokenStream2 = code.parse().map_err(|e| {
        syn::Error::new(
            literal.span(),
            format!("import!(\"{name}\"): the generated code does not parse ({e}); this is a bug of the SDK"),
        )
    })?;
    // The items get the span of the literal: rustc then treats them as code of
    // this crate, and warns about each method that is never used.
    Ok(respan(tokens, literal.span()))
}

fn respan(tokens: TokenStream2, span: Span) -> TokenStream2 {
    tokens
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Group(group) => {
                let mut new = proc_macro2::Group::new(group.delimiter(), respan(group.stream(), span));
                new.set_span(span);
                TokenTree::Group(new)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------
// #[test]

fn test_impl(attr: TokenStream2, item: TokenStream2) -> syn::Result<TokenStream2> {
    if !attr.is_empty() {
        return Err(syn::Error::new(attr.span(), "#[sausage_plugin::test] takes no options"));
    }
    let mut function: ItemFn = syn::parse2(item)?;
    if function.sig.asyncness.is_none() {
        return Err(syn::Error::new(
            function.sig.fn_token.span(),
            format!(
                "#[sausage_plugin::test] is for async tests: write `async fn {}()`, or use #[test] for a plain fn",
                function.sig.ident
            ),
        ));
    }
    if !function.sig.inputs.is_empty() {
        return Err(syn::Error::new(function.sig.inputs.span(), "a test takes no arguments"));
    }
    function.sig.asyncness = None;
    let body = &function.block;
    let new_body: syn::Block = syn::parse_quote!({
        ::sausage_plugin::__private::block_on_test(async move #body)
    });
    *function.block = new_body;
    Ok(quote! {
        #[::core::prelude::v1::test]
        #function
    })
}

#[cfg(test)]
mod tests {
    //! `import!("<name>")` and the host's `/proc/core/plugins/<name>/client.rs`
    //! must show the same code. The host runs the generator's command
    //! (`sausage-plugin-codegen/src/main.rs`, tested in
    //! `sausage-plugin-codegen/tests/command.rs`), which writes
    //! `sausage_plugin_codegen::generate` of the document; these tests pin
    //! the macro's side: its expansion is that same text as tokens, with
    //! nothing added, left out or changed (only the spans differ).

    use super::import_impl;
    use proc_macro2::TokenStream as TokenStream2;
    use quote::quote;

    /// The document of the example `notes`, as a plugin copies it from
    /// `/proc/core/plugins/notes/discover.json` (indented).
    const NOTES: &str = include_str!("../imports/notes.json");

    #[test]
    fn import_expands_to_exactly_the_generated_module() {
        // cargo runs the test in this package: import! reads imports/notes.json here
        let expanded = import_impl(quote!("notes")).unwrap();
        let text = sausage_plugin_codegen::generate(NOTES, "notes").unwrap();
        let generated: TokenStream2 = text.parse().unwrap();
        assert_eq!(expanded.to_string(), generated.to_string());
        assert!(text.contains("pub(crate) fn add(params: AddParams) -> ::sausage_plugin::Call<Added>"), "{text}");
    }

    #[test]
    fn the_host_and_the_macro_read_the_same_document_alike() {
        // the host gives the generator the document as compact JSON; the
        // file in imports/ is the indented copy of /proc/.../discover.json
        let value: serde_json::Value = serde_json::from_str(NOTES).unwrap();
        let compact = serde_json::to_string(&value).unwrap();
        assert_ne!(compact, NOTES.trim_end());
        let from_host: TokenStream2 = sausage_plugin_codegen::generate(&compact, "notes").unwrap().parse().unwrap();
        assert_eq!(import_impl(quote!("notes")).unwrap().to_string(), from_host.to_string());
    }

    #[test]
    fn a_missing_document_says_where_to_copy_it_from() {
        let error = import_impl(quote!("nothing")).unwrap_err().to_string();
        assert!(error.contains("cannot read imports/nothing.json"), "{error}");
        assert!(error.contains("Copy /proc/core/plugins/nothing/discover.json there"), "{error}");
    }
}
