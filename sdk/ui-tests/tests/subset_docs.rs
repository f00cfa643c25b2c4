//! The list of the types in the schema subset, in `sdk/README.md` and in
//! the docs of `SchemaType`, is the list the code accepts: each type that
//! `sausage-plugin/src/interface.rs` implements `SchemaType` for is named,
//! and each type named in the list is accepted.

const README: &str = include_str!("../../README.md");
const INTERFACE: &str = include_str!("../../sausage-plugin/src/interface.rs");

/// The types with `SchemaType`: those of `schema_types!(...)`, and the
/// generic ones, `Vec<T>` from `impl<T: SchemaType> SchemaType for Vec<T> {}`.
fn accepted() -> Vec<String> {
    let start = INTERFACE.find("schema_types!(bool").expect("the schema_types! line") + "schema_types!(".len();
    let end = start + INTERFACE[start..].find(");").unwrap();
    let mut types: Vec<String> = INTERFACE[start..end]
        .split(',')
        .map(|t| t.trim().rsplit("::").next().unwrap().to_owned())
        .filter(|t| !t.is_empty())
        .collect();
    for line in INTERFACE.lines() {
        if let Some(rest) = line.strip_prefix("impl<T: SchemaType> SchemaType for ") {
            types.push(rest.trim_end_matches(" {}").to_owned());
        }
    }
    types
}

/// The paragraph (or list item) that names the schema subset.
fn subset_text<'a>(text: &'a str, starts: &str) -> &'a str {
    let start = text.find(starts).unwrap_or_else(|| panic!("no {starts:?}"));
    let end = text[start..].find("\n\n").map_or(text.len(), |n| start + n);
    &text[start..end]
}

/// The docs of `SchemaType`, without the `///`.
fn schema_type_docs() -> String {
    let end = INTERFACE.find("pub trait SchemaType").unwrap();
    let start = INTERFACE[..end].rfind("/// A type of the schema subset").unwrap();
    INTERFACE[start..end].lines().map(|l| l.trim_start_matches("///").trim()).collect::<Vec<_>>().join(" ")
}

fn names_type(text: &str, ty: &str) -> bool {
    text.contains(&format!("`{ty}`"))
}

#[test]
fn the_readme_names_each_accepted_type() {
    let text = subset_text(README, "- Every type a method takes or returns is in the schema subset");
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let types = accepted();
    assert!(types.len() > 15, "{types:?}");
    for ty in &types {
        assert!(names_type(&text, ty), "README.md does not name `{ty}` in: {text}");
    }
}

#[test]
fn the_docs_of_schema_type_name_each_accepted_type() {
    let text = schema_type_docs();
    for ty in accepted() {
        assert!(names_type(&text, &ty), "the docs of SchemaType do not name `{ty}`: {text}");
    }
}
