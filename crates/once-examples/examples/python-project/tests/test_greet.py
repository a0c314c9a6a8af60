import unittest

from hello import greeting


class GreetingTest(unittest.TestCase):
    def test_greets_by_name(self) -> None:
        self.assertEqual(greeting("Ada"), "Hello, Ada!")

    def test_a_blank_name_greets_the_world(self) -> None:
        self.assertEqual(greeting("  "), "Hello, world!")
        self.assertEqual(greeting(), "Hello, world!")


if __name__ == "__main__":
    unittest.main()
