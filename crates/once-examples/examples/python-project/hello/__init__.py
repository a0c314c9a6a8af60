"""How to greet someone."""


def greeting(name: str = "") -> str:
    """A greeting for `name`; a blank name greets the world."""
    name = name.strip()
    return f"Hello, {name}!" if name else "Hello, world!"
