"""Reads price lists: one `name,cents` pair per line."""


def parse(text: str) -> dict[str, int]:
    """Prices by name; blank lines and `#` comments are skipped."""
    prices: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, cents = line.partition(",")
        if not cents.strip().isdigit():
            raise ValueError(f"line {number}: expected `name,cents`, found {line!r}")
        prices[name.strip()] = int(cents)
    return prices
