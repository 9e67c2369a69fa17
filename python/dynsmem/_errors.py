"""The package's exception, shared by every native module (the built-in one and a
researcher's own, which raise this same class)."""


class DynsmemError(Exception):
    """A refusal or failure of dynsmem, with the text its command line prints (the causes
    joined by ': '): a config over a limit, an unknown option, a kernel that did not verify."""
