"""Python toolchain pointing at the project's virtualenv interpreter.

Bazel 4.2 needs an absolute `interpreter_path` for a non-hermetic
interpreter. This repository rule computes it at fetch time from the
location of the main workspace (`<workspace>/.venv/bin/python`, the venv the
Makefile builds from requirements/lock.txt) and generates a `py_runtime`,
`py_runtime_pair` and `toolchain` in the `@venv_python` repository.

Set QUARL_BAZEL_PYTHON to an absolute interpreter path to use another one.
Nothing is downloaded.
"""

_BUILD = """\
load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")

py_runtime(
    name = "py3_runtime",
    interpreter_path = "{python}",
    python_version = "PY3",
    # The py_binary/py_test launcher stub runs with the same interpreter, so
    # no system `python3` is needed on PATH.
    stub_shebang = "#!{python}",
    visibility = ["//visibility:public"],
)

py_runtime_pair(
    name = "runtime_pair",
    py3_runtime = ":py3_runtime",
)

toolchain(
    name = "toolchain",
    toolchain = ":runtime_pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)
"""

def _venv_python_impl(rctx):
    python = rctx.os.environ.get("QUARL_BAZEL_PYTHON", "")
    if not python:
        workspace = rctx.path(Label("@//:WORKSPACE")).dirname
        python = "%s/.venv/bin/python" % workspace
    if not python.startswith("/"):
        fail("QUARL_BAZEL_PYTHON must be an absolute path, got %r" % python)
    if not rctx.path(python).exists:
        fail(("No Python interpreter at %s. Create the project's virtualenv " +
              "first (`make venv`, which installs requirements/lock.txt) or " +
              "set QUARL_BAZEL_PYTHON.") % python)
    rctx.file("WORKSPACE", 'workspace(name = "%s")\n' % rctx.name)
    rctx.file("BUILD", _BUILD.format(python = python))

venv_python = repository_rule(
    implementation = _venv_python_impl,
    environ = ["QUARL_BAZEL_PYTHON"],
    local = True,
)
