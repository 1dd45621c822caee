"""Run a notebook on a machine that has JAX but no Jupyter and no TensorFlow: the lent GPU.

The accelerator machine this project's sessions are sometimes lent has JAX with CUDA and
Python 3.12, no TensorFlow, no Jupyter kernel and no package registry; Keras 3 travels as a
wheel (`make device-wheels`). So this runs a notebook's code cells itself, in one Python
namespace, in order, the way "Run all" does, with nothing but the standard library:

- the value of a cell's last expression is kept as its result, as Jupyter shows it;
- `-p name=value` sets a parameter after the cell tagged `parameters`, as papermill does;
- IPython line magics (`%pip`, only in the Colab branch of the first cell) become a line
  that raises if it is ever reached;
- `--hide tensorflow` makes a package look uninstalled (its `sys.modules` entry set to None:
  `import` raises ImportError and `importlib.util.find_spec` returns None), so the JAX-only
  path is tested on a machine that has TensorFlow.

It stops at the first cell that raises and still writes what ran. It writes the executed
copy (`<stem>.device.ipynb`) and one result line (`device_runs.jsonl`, the compatibility
table's record format, lane "current": the Keras of the current lane on that machine's JAX)
into `--out`. Committed as `compat/device_runs.jsonl`, the line puts that runtime in the
README's table (`make compat`).

On the lent machine, from the repository root, with the wheels carried in `.whl`:

    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
    PYTHONPATH=/tmp/site:. python3 -m tools.device_run --out "$OUT"
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import os
import platform
import re
import sys
import time
import traceback
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_NOTEBOOK = ROOT / "notebooks" / "11_keras3_jax.ipynb"
MAGIC = re.compile(r"^(\s*)[%!].*$")
RUNTIME_LINE = re.compile(r"Runtime: (TPU|GPU|CPU)\b.*? with (\d+) replica")


def parameter_value(text: str) -> Any:
    """`8` -> 8, `'gpu'` or `gpu` -> 'gpu': a Python literal where it is one, else the text."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def without_magics(source: str) -> str:
    """The cell with each IPython magic or shell line replaced by a raise (same indentation)."""
    return "\n".join(
        MAGIC.sub(lambda m: f'{m.group(1)}raise RuntimeError("IPython magics need Jupyter")', line)
        for line in source.splitlines()
    )


def run_cell(source: str, namespace: dict[str, Any]) -> tuple[str, str, str | None]:
    """Execute one cell; return its stdout, its stderr and the repr of its last expression."""
    tree = ast.parse(without_magics(source), mode="exec")
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        exec(compile(tree, "<cell>", "exec"), namespace)  # the notebook's own code
        value = None
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
    return stdout.getvalue(), stderr.getvalue(), None if value is None else repr(value)


def outputs_of(stdout: str, stderr: str, result: str | None, count: int) -> list[dict]:
    outputs: list[dict] = [
        {"output_type": "stream", "name": name, "text": text.splitlines(keepends=True)}
        for name, text in (("stdout", stdout), ("stderr", stderr))
        if text
    ]
    if result is not None:
        outputs.append(
            {
                "output_type": "execute_result",
                "execution_count": count,
                "data": {"text/plain": result.splitlines(keepends=True)},
                "metadata": {},
            }
        )
    return outputs


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
    tagged = [
        i for i, c in enumerate(cells) if "parameters" in c.get("metadata", {}).get("tags", [])
    ]
    if not tagged:
        raise SystemExit("the notebook has no cell tagged `parameters`: -p cannot set anything")
    cells.insert(tagged[0] + 1, parameter_cell(parameters))
    return notebook


def hide(packages: list[str]) -> None:
    """Make `packages` look uninstalled to this process."""
    for package in packages:
        if any(name == package or name.startswith(package + ".") for name in sys.modules):
            raise SystemExit(f"{package} is already imported: it cannot be hidden any more")
        sys.modules[package] = None  # type: ignore[assignment]


def execute(notebook: dict, cwd: Path) -> tuple[bool, str]:
    """Run every code cell in order, writing their outputs into `notebook`; stop at the first
    error. Return whether every cell ran, and all they printed."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    printed, count = [], 0
    with contextlib.chdir(cwd):
        for cell in notebook["cells"]:
            if cell["cell_type"] != "code":
                continue
            count += 1
            cell["execution_count"] = count
            source = "".join(cell["source"])
            try:
                stdout, stderr, result = run_cell(source, namespace)
            except BaseException as error:  # reported in the cell, as Jupyter does
                if isinstance(error, KeyboardInterrupt):
                    raise
                cell["outputs"] = [
                    {
                        "output_type": "error",
                        "ename": type(error).__name__,
                        "evalue": str(error),
                        "traceback": traceback.format_exception(error),
                    }
                ]
                print(f"cell {count}: {type(error).__name__}: {str(error).splitlines()[:1]}")
                return False, "".join(printed)
            cell["outputs"] = outputs_of(stdout, stderr, result, count)
            printed.append(stdout)
            sys.stdout.write(stdout)
    return True, "".join(printed)


def installed(package: str) -> str | None:
    if sys.modules.get(package, False) is None:  # hidden
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
    devices = jax.devices()
    return f"{len(devices)} × {devices[0].device_kind}"


def result_line(notebook: Path, passed: bool, printed: str) -> dict:
    """The run as one compatibility-table record; kind and replicas from its runtime line."""
    runtime = RUNTIME_LINE.search(printed)
    return {
        "notebook": notebook.name,
        "lane": "current",
        "kind": runtime.group(1) if runtime else None,
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
    started = time.monotonic()
    passed, printed = execute(notebook, cwd=args.notebook.parent)
    seconds = time.monotonic() - started

    args.out.mkdir(parents=True, exist_ok=True)
    executed = args.out / f"{args.notebook.stem}.device.ipynb"
    executed.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    record = result_line(args.notebook, passed, printed) | {"seconds": round(seconds, 1)}
    with (args.out / "device_runs.jsonl").open("a") as file:
        file.write(json.dumps(record) + "\n")
    print(f"{'passed' if passed else 'FAILED'} in {seconds:.0f} s: {executed}")
    print(json.dumps(record))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
