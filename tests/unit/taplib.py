"""taplib.py - TAP output for the Python tests of the unit suite
(serve-limits.py, openapi.py): numbered checks, the plan at the end."""
import sys

_n = 0
_failed = False


def ok(cond, desc, diag=None):
    global _n, _failed
    _n += 1
    print(("ok" if cond else "not ok") + " %d - %s" % (_n, desc))
    if not cond:
        _failed = True
        if diag:
            print("# " + str(diag).replace("\n", "\n# "))


def done():
    """The plan, then exit 1 if any check failed."""
    print("1..%d" % _n)
    sys.exit(1 if _failed else 0)
