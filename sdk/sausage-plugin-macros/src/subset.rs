//! A first look at types outside the schema subset of PROTOCOL 10.2, by how
//! they are written: maps, sets, tuples, arrays, references, 128-bit
//! integers, `char` and raw JSON values get an error that names the method
//! or field and says what to write instead. A type it does not recognize
//! (an alias, a type of another crate) is left to the `SchemaType` bound.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{GenericArgument, PathArguments, Type};

/// The part of a type that is outside the subset.
pub struct Outside {
    /// That part, as written.
    pub found: String,
    /// Its tokens, so that an error underlines all of it.
    pub tokens: TokenStream,
    /// Why it is outside, and what to write instead.
    pub advice: &'static str,
}

/// The first part of `ty` (itself, or an item of its `Vec`, `Option` or
/// `Box`) that is known to be outside the subset.
pub fn outside_subset(ty: &Type) -> Option<Outside> {
    let outside = |advice| Some(Outside { found: written(ty), tokens: ty.to_token_stream(), advice });
    match ty {
        Type::Group(g) => outside_subset(&g.elem),
        Type::Paren(p) => outside_subset(&p.elem),
        Type::Tuple(t) if t.elems.is_empty() => None,
        Type::Tuple(_) => outside("a tuple has no field names; use a #[schema] struct with named fields"),
        Type::Array(_) | Type::Slice(_) => outside("use Vec<T>, an array of any length"),
        Type::Reference(_) => outside("use an owned type, such as String for &str or Vec<T> for &[T]"),
        Type::Path(p) if p.qself.is_none() => {
            let segments = &p.path.segments;
            let last = segments.last()?;
            let in_serde_json = segments.iter().any(|s| s.ident == "serde_json");
            match last.ident.to_string().as_str() {
                "HashMap" | "BTreeMap" | "IndexMap" => outside(
                    "the keys of a map are not fixed fields; use Vec<T> of a #[schema] struct with a field \
                     for the key and one for the value",
                ),
                "HashSet" | "BTreeSet" | "IndexSet" => outside("use Vec<T>"),
                "i128" | "u128" => outside("integers have at most 64 bits; use i64 or u64, or a String"),
                "char" => outside("use String"),
                "Value" | "Map" if in_serde_json => outside(
                    "any JSON value says nothing of its shape to a caller; use a #[schema] struct with named \
                     fields",
                ),
                "Vec" | "Option" | "Box" => first_type_argument(&last.arguments).and_then(outside_subset),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `T` of `Name<T, ...>`.
pub fn first_type_argument(arguments: &PathArguments) -> Option<&Type> {
    let PathArguments::AngleBracketed(a) = arguments else { return None };
    a.args.iter().find_map(|arg| match arg {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    })
}

/// A type as a person writes it (`HashMap<String, u32>`, not
/// `HashMap < String , u32 >`).
pub fn written(ty: &Type) -> String {
    let mut text = ty.to_token_stream().to_string();
    for (spaced, tight) in [
        (" < ", "<"),
        ("< ", "<"),
        (" <", "<"),
        (" >", ">"),
        (" ,", ","),
        (" :: ", "::"),
        (":: ", "::"),
        ("& ", "&"),
        ("( ", "("),
        (" )", ")"),
        ("[ ", "["),
        (" ]", "]"),
        (" ;", ";"),
    ] {
        text = text.replace(spaced, tight);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(ty: &str) -> Option<String> {
        outside_subset(&syn::parse_str(ty).unwrap()).map(|o| o.found)
    }

    #[test]
    fn known_types_outside_the_subset_are_found_also_inside_vec_option_and_box() {
        assert_eq!(check("HashMap<String, u32>").as_deref(), Some("HashMap<String, u32>"));
        assert_eq!(check("Vec<(String, u32)>").as_deref(), Some("(String, u32)"));
        assert_eq!(check("Option<Box<[u8; 4]>>").as_deref(), Some("[u8; 4]"));
        assert_eq!(check("&'static str").as_deref(), Some("&'static str"));
        assert_eq!(check("serde_json::Value").as_deref(), Some("serde_json::Value"));
        assert_eq!(check("Vec<std::collections::BTreeSet<u8>>").as_deref(), Some("std::collections::BTreeSet<u8>"));
        assert_eq!(check("u128").as_deref(), Some("u128"));
    }

    #[test]
    fn types_in_the_subset_and_unknown_ones_pass() {
        for ty in ["()", "String", "Vec<Option<u64>>", "Box<Note>", "Value", "std::path::PathBuf", "Counts"] {
            assert_eq!(check(ty), None, "{ty}");
        }
    }
}
