fn main() {
    println!("{}", shapes::rectangle(4, 5));
}
