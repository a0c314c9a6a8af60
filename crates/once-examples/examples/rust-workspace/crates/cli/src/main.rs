//! Prints a greeting for the name given on the command line.

fn message(args: &[String]) -> String {
    hello_core::greeting(&args.join(" "))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    println!("{}", message(&args));
}

#[cfg(test)]
mod tests {
    use super::message;

    #[test]
    fn joins_the_arguments_into_one_name() {
        let args = vec!["Grace".to_string(), "Hopper".to_string()];
        assert_eq!(message(&args), "Hello, Grace Hopper!");
    }
}
