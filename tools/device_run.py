"""Run a notebook on a machine that has JAX but no Jupyter and no TensorFlow: the lent GPU.

The accelerator machine this project's sessions are sometimes lent has JAX with CUDA and
Python 3.12, no TensorFlow, no Jupyter kernel and no package registry; Keras 3 travels as a
wheel (`make device-wheels`). So this runs a notebook's code cells itself, in one Python
namespace (a fresh `__main__` module), in order, the way "Run all" does, with nothing but the
standard library:

- each cell's source is registered with `linecache`, as IPython does, so that
  `inspect.getsource` works on the functions a cell defines and tracebacks show the lines;
- the value of a cell's last expression is kept as its result, as Jupyter shows it (not when
  the line ends in `;`);
- `-p name=value` sets a parameter after the cell tagged `parameters`, as papermill does;
- a line that does not parse because it is an IPython magic or shell line (`%pip`, only in
  the Colab branch of notebook 11's first cell) becomes a line that raises if it is reached;
- `--hide tensorflow` makes a package unimportable: its `sys.modules` entry is set to None,
  so `import` raises ImportError and `importlib.util.find_spec` returns None (its name is
  still a key of `sys.modules` and its metadata is still found), and the JAX-only path is
  tested on a machine that has TensorFlow. Processes the notebook starts still see it.

Every output from an earlier recording is cleared first. After each cell the executed copy
(`<stem>.device.ipynb`) is written again, so a run stopped by a time limit (SIGTERM) leaves
what ran; the first cell that raises stops the run, its output kept up to the error. One
result line goes to `device_runs.jsonl` in the compatibility table's record format, lane
"current" (the Keras of the current lane, on that machine's JAX). Committed as
`compat/device_runs.jsonl`, it puts that runtime in the compatibility table (`make compat`).

On the lent machine, from the repository root, with `.whl` named in the run's `carry`:

    python3 -m pip install -q --no-index --no-deps --no-compile --upgrade \
        --target /tmp/site .whl/*.whl
    PYTHONPATH=/tmp/site:. python3 -m tools.device_run --out "$OUT"
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import linecache
import os
import platform
import re
import signal
import sys
import time
import tokenize
import traceback
import types
from collections.abc import Callable, Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_NOTEBOOK = ROOT / "notebooks" / "11_keras3_jax.ipynb"
MAGIC = re.compile(r"^(\s*)[%!]")
RUNTIME_LINE = re.compile(r"Runtime: (TPU|GPU|CPU)\b.*? with (\d+) replica")
MAGIC_RAISES = 'raise RuntimeError("IPython magics need Jupyter")'


class Stopped(BaseException):
    """SIGTERM arrived (a time limit): stop after writing what ran. A BaseException, so that
    a cell's own `except Exception` cannot swallow it."""


def parameter_value(text: str) -> Any:
    """`8` -> 8, `'gpu'` or `gpu` -> 'gpu': a Python literal where it is one, else the text."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_cell(source: str, filename: str) -> ast.Module:
    """The cell's syntax tree; a line that fails to parse and starts with % or ! (a magic or a
    shell line) is replaced by a raise, with its indentation, until the cell parses."""
    try:
        return ast.parse(source, filename=filename, mode="exec")
    except SyntaxError:
        pass
    lines = source.splitlines()
    while True:
        try:
            return ast.parse("\n".join(lines), filename=filename, mode="exec")
        except SyntaxError as error:
            number = (error.lineno or 0) - 1
            if not 0 <= number < len(lines) or not (match := MAGIC.match(lines[number])):
                raise
            lines[number] = match.group(1) + MAGIC_RAISES


def ends_in_semicolon(source: str) -> bool:
    """Whether the cell's last token, comments aside, is `;` (IPython then shows no result)."""
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT}
    skipped |= {tokenize.DEDENT, tokenize.ENDMARKER}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return False
    meaningful = [token for token in tokens if token.type not in skipped]
    return bool(meaningful) and meaningful[-1].string == ";"


def run_cell(
    source: str, namespace: dict[str, Any], filename: str = "<cell>", count: int | None = None
) -> list[dict]:
    """Execute one cell; return its outputs (stdout, stderr, the last expression's repr). If
    it raises, the outputs so far are attached to the exception as `cell_outputs`."""
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    stdout, stderr = io.StringIO(), io.StringIO()
    value = None
    try:
        tree = parse_cell(source, filename)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        shown = last is not None and not ends_in_semicolon(source)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            exec(compile(tree, filename, "exec"), namespace)  # the notebook's own code
            if last is not None:
                value = eval(compile(ast.Expression(last.value), filename, "eval"), namespace)
    except BaseException as error:
        error.cell_outputs = streams(stdout.getvalue(), stderr.getvalue())  # type: ignore[attr-defined]
        raise
    outputs = streams(stdout.getvalue(), stderr.getvalue())
    if shown and value is not None:
        text = repr(value).splitlines(keepends=True)
        outputs.append({"output_type": "execute_result", "data": {"text/plain": text}})
        outputs[-1] |= {"metadata": {}, "execution_count": count}
    return outputs


def streams(stdout: str, stderr: str) -> list[dict]:
    return [
        {"output_type": "stream", "name": name, "text": text.splitlines(keepends=True)}
        for name, text in (("stdout", stdout), ("stderr", stderr))
        if text
    ]


def error_output(error: BaseException) -> dict:
    return {
        "output_type": "error",
        "ename": type(error).__name__,
        "evalue": str(error),
        "traceback": traceback.format_exception(error),
    }


def parameter_cell(parameters: dict[str, Any]) -> dict:
    source = "# Parameters\n" + "".join(f"{k} = {v!r}\n" for k, v in parameters.items())
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": "injected-parameters",
        "metadata": {"tags": ["injected-parameters"]},
        "outputs": [],
        "source": source.splitlines(keepends=True),
    }


def with_parameters(notebook: dict, parameters: dict[str, Any]) -> dict:
    """The notebook with a cell setting `parameters` after its `parameters` cell."""
    if not parameters:
        return notebook
    cells = notebook["cells"]
    tags = [cell.get("metadata", {}).get("tags", []) for cell in cells]
    tagged = [index for index, cell_tags in enumerate(tags) if "parameters" in cell_tags]
    if not tagged:
        raise SystemExit("the notebook has no cell tagged `parameters`: -p cannot set anything")
    cells.insert(tagged[0] + 1, parameter_cell(parameters))
    return notebook


def hide(packages: list[str]) -> None:
    """Make `packages` unimportable in this process (see the module docstring)."""
    for package in packages:
        if any(name == package or name.startswith(package + ".") for name in sys.modules):
            raise SystemExit(f"{package} is already imported: it cannot be hidden any more")
        sys.modules[package] = None  # type: ignore[assignment]


_sigterm = {"held": False, "pending": False}


def stop_on_sigterm(signum: int, frame: Any) -> None:
    """Raise Stopped, or, while a copy is being written, once the writing is done. (Python
    runs signal handlers in the main thread between bytecodes, so a flag does what masking
    the signal cannot once JAX has started threads of its own.)"""
    if _sigterm["held"]:
        _sigterm["pending"] = True
        return
    raise Stopped("stopped by SIGTERM (a time limit?)")


@contextlib.contextmanager
def sigterm_held() -> Iterator[None]:
    """Let a SIGTERM that arrives in the block take effect after it."""
    was_held, _sigterm["held"] = _sigterm["held"], True
    try:
        yield
    finally:
        _sigterm["held"] = was_held
        if not was_held and _sigterm["pending"]:
            _sigterm["pending"] = False
            raise Stopped("stopped by SIGTERM (a time limit?)")


def execute(notebook: dict, cwd: Path, after_cell: Callable[[], None], printed: list[str]) -> bool:
    """Run every code cell in order, writing their outputs into `notebook`, what they print
    to stdout into `printed`, and calling `after_cell` after each; stop at the first error.
    Return whether every cell ran."""
    code_cells = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    for cell in code_cells:  # nothing recorded elsewhere may pass for this run's output
        cell["outputs"], cell["execution_count"] = [], None
    main_module = types.ModuleType("__main__")  # functions defined in cells live here
    saved_main, sys.modules["__main__"] = sys.modules["__main__"], main_module
    try:
        with contextlib.chdir(cwd):
            for count, cell in enumerate(code_cells, start=1):
                cell["execution_count"] = count
                outputs: list[dict] = []
                echoed = False
                try:
                    source = "".join(cell["source"])
                    outputs = run_cell(source, main_module.__dict__, f"<cell-{count}>", count)
                    cell["outputs"] = outputs
                    printed += echo(outputs)
                    echoed = True
                except BaseException as error:  # Ctrl-C too: what ran is written, and a record
                    _sigterm["held"] = True  # stopping: a later SIGTERM waits for the record
                    # raised in the cell: what it printed so far; raised after it (a SIGTERM
                    # while its output was echoed): the cell's own outputs, which stand
                    ran = getattr(error, "cell_outputs", outputs)
                    cell["outputs"] = [*ran, error_output(error)]
                    if not echoed:
                        printed += echo(ran)
                    first_line = (str(error).splitlines() or [""])[0]
                    print(f"cell {count}: {type(error).__name__}: {first_line}")
                    return False
                finally:
                    after_cell()
    finally:
        sys.modules["__main__"] = saved_main
    return True


def echo(outputs: list[dict]) -> list[str]:
    """What a cell printed to stdout, also printed here (the run's log)."""
    texts = [
        "".join(output["text"])
        for output in outputs
        if output["output_type"] == "stream" and output["name"] == "stdout"
    ]
    sys.stdout.write("".join(texts))
    return texts


def installed(package: str) -> str | None:
    if package in sys.modules and sys.modules[package] is None:  # hidden
        return None
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def machine() -> str | None:
    """'1 × NVIDIA H200': the devices of the JAX the notebook started, if it started one."""
    jax = sys.modules.get("jax")
    if jax is None:
        return None
    try:
        devices = jax.devices()
    except Exception as error:  # a broken JAX must not lose the record
        return f"JAX's devices unknown ({type(error).__name__})"
    return f"{len(devices)} × {devices[0].device_kind}"


def result_line(notebook: Path, passed: bool, printed: str) -> dict:
    """The run as one compatibility-table record; kind and replicas from its runtime line (a
    run that stopped before it: GPU if the machine has one, else CPU)."""
    runtime = RUNTIME_LINE.search(printed)
    kind = runtime.group(1) if runtime else "GPU" if Path("/dev/nvidia0").exists() else "CPU"
    return {
        "notebook": notebook.name,
        "lane": "current",
        "kind": kind,
        "replicas": int(runtime.group(2)) if runtime else None,
        "expected_error": None,
        "passed": passed,
        "tensorflow": installed("tensorflow"),
        "keras": installed("keras"),
        "jax": installed("jax"),
        "python": platform.python_version(),
        "machine": machine(),
        "runner": "tools.device_run",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notebook", type=Path, default=DEFAULT_NOTEBOOK)
    parser.add_argument("--out", type=Path, required=True, help="folder for the two files")
    parser.add_argument("-p", dest="parameters", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--hide", action="append", default=[], metavar="PACKAGE")
    args = parser.parse_args(argv)
    parameters = {}
    for item in args.parameters:
        name, separator, value = item.partition("=")
        if not separator or not name.isidentifier():
            parser.error(f"-p {item!r}: write it as name=value, e.g. -p virtual_replicas=2")
        parameters[name] = parameter_value(value)
    hide(args.hide)
    sys.path.insert(0, str(ROOT))  # `helpers` from this checkout
    paths = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)  # and in the processes it starts

    notebook = with_parameters(json.loads(args.notebook.read_text()), parameters)
    args.out.mkdir(parents=True, exist_ok=True)
    executed = args.out / f"{args.notebook.stem}.device.ipynb"

    def write_copy() -> None:  # whole or not at all: a SIGTERM may come while it writes
        with sigterm_held():
            partial = executed.with_suffix(".partial")
            partial.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
            os.replace(partial, executed)

    _sigterm.update(held=False, pending=False)
    previous = signal.signal(signal.SIGTERM, stop_on_sigterm)
    started, printed = time.monotonic(), []
    try:
        passed = execute(notebook, args.notebook.parent, write_copy, printed)
    except Stopped:  # while a copy was written, or between two cells
        _sigterm["held"] = True  # a later SIGTERM waits: the record below is written
        print("stopped by SIGTERM between two cells")
        passed = False
    _sigterm["held"] = True
    signal.signal(signal.SIGTERM, previous)
    seconds = time.monotonic() - started
    record = result_line(args.notebook, passed, "".join(printed))
    record["seconds"] = round(seconds, 1)
    with (args.out / "device_runs.jsonl").open("a") as file:
        file.write(json.dumps(record) + "\n")
    print(f"{'passed' if passed else 'FAILED'} in {seconds:.0f} s: {executed}")
    print(json.dumps(record))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
