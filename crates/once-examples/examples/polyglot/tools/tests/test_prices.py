import unittest

from prices import parse


class ParseTest(unittest.TestCase):
    def test_reads_pairs_and_skips_comments(self) -> None:
        self.assertEqual(parse("# list\napple, 120\n\npear,95\n"), {"apple": 120, "pear": 95})

    def test_names_the_bad_line(self) -> None:
        with self.assertRaisesRegex(ValueError, "line 2"):
            parse("apple,120\npear,cheap\n")


if __name__ == "__main__":
    unittest.main()
