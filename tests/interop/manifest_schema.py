"""Validates once.toml files against `once query schema --manifest` with the `jsonschema` package
(a dependency of the MCP Python SDK, so already in target/interop/venv), as an editor's TOML
support would: every manifest once ships must pass, and manifests with a misspelt key must fail.

    python manifest_schema.py ONCE_BINARY REPOSITORY_ROOT

Prints one line per check and ends with `N passed, N failed`; exits 1 if any failed.
"""

import json
import subprocess
import sys
import tomllib

import jsonschema


def once(binary, *args):
    return subprocess.run([binary, *args], check=True, capture_output=True, text=True, timeout=30).stdout


def main():
    binary, root = sys.argv[1], sys.argv[2]
    schema = json.loads(once(binary, "query", "schema", "--manifest"))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)

    good = {"examples/starter/once.toml": open(f"{root}/examples/starter/once.toml", "rb").read().decode()}
    for row in json.loads(once(binary, "examples", "list", "--json"))["examples"]:
        name = row["name"]
        good[f"example {name}"] = once(binary, "examples", "show", name, "--file", "once.toml")
    bad = {
        "a misspelt table": '[worksapce]\nname = "shop"\n',
        "a misspelt target key": '[targets.web]\nkidn = "command"\n',
        "a misspelt capability key": '[targets.web.capabilities.test]\ncomand = "npm test"\n',
        "a wrong type": '[workspace]\nmembers = "services/*"\n',
    }

    passed = failed = 0
    for what, text in good.items():
        errors = [e.message for e in validator.iter_errors(tomllib.loads(text))]
        if errors:
            failed += 1
            print(f"FAIL {what} should be valid: {errors}")
        else:
            passed += 1
            print(f"ok   {what} is valid")
    for what, text in bad.items():
        if validator.is_valid(tomllib.loads(text)):
            failed += 1
            print(f"FAIL {what} should be invalid")
        else:
            passed += 1
            print(f"ok   {what} is invalid")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
