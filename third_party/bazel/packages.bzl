"""One macro for the repository's Python packages (quarl, agents, launch)."""

# Everything in a package that is not Python source ships as data.
NON_SOURCE_FILES = [
    "**/*.py",
    "**/*.pyc",
    "**/__pycache__/**",
    "BUILD",
]

def python_package(name, deps = []):
    """py_library of every .py file below this BUILD, importable by name
    (`import <name>...`) from the repository root."""
    native.py_library(
        name = name,
        srcs = native.glob(["**/*.py"]),
        data = native.glob(["**/*"], exclude = NON_SOURCE_FILES),
        imports = [".."],
        srcs_version = "PY3",
        deps = deps,
    )
