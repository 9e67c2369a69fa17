"""``python -m dynsmem ARGS...``: the command line, over the package's native module (and the
process a sweep's worker runs). ``--native MODULE`` first: over a researcher's own module."""

import importlib
import sys


def main(argv: list[str]) -> int:
    import dynsmem

    if argv[:1] == ["--native"]:
        if len(argv) < 2:
            print("error: --native needs a module name", file=sys.stderr)
            return 2
        dynsmem.use_native(importlib.import_module(argv[1]))
        argv = argv[2:]
    try:
        text = dynsmem.cli(*argv)
    except dynsmem.DynsmemError as e:
        print(f"Error: {e}", file=sys.stderr)
        return 1
    if text:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
