#[test]
fn an_integration_test() {
    assert_eq!(2 + 2, 4);
}
