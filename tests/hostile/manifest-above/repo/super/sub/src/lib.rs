#[test]
fn own_test() {
    std::fs::write("own-ran", "").unwrap();
}
