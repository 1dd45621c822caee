"""Execute a notebook with papermill and judge the result the way Colab's "Run all" would.

Colab, and every front end other than classic Jupyter and JupyterLab, ignores the
`raises-exception` tag and stops at the first cell that ends in an error. So does this
harness: tags are ignored (nbclient's `force_raise_errors`), execution stops at the first
error, and a run counts as passed only when every code cell ran and none produced an error
output. A pitfall is shown by a cell that catches its exception and asserts that it was
raised, never by a cell that ends in an error. papermill prepends error-marker cells to the
output notebook of a failed run; they are removed so the executed notebook reads as it
should.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from traitlets.config import Config

# The tag nbval and Jupyter honour to let a cell end in an error. Colab ignores it, so the
# collection forbids it (tests/test_notebook_conventions.py) and this harness ignores it.
RAISES_EXCEPTION_TAG = "raises-exception"
PAPERMILL_MARKER_TAG = "papermill-error-cell-tag"
# The kernel talks to this process over Unix sockets in Jupyter's runtime folder instead of
# TCP on localhost. Over TCP, ipykernel (kernelapp.py, init_sockets) warns on stderr at every
# start that the connection is unencrypted, a line per notebook in `make run`; over IPC it
# has nothing to warn about, and every other message on stderr still shows.
KERNEL_CONFIG = Config({"KernelManager": {"transport": "ipc"}})


@dataclass(frozen=True)
class CellError:
    index: int
    execution_count: int | None
    ename: str
    evalue: str

    def one_line(self) -> str:
        first = self.evalue.strip().splitlines()[0] if self.evalue.strip() else ""
        return f"cell [{self.execution_count}]: {self.ename}: {first}"


@dataclass(frozen=True)
class Outcome:
    source: Path
    output: Path
    seconds: float
    errors: list[CellError] = field(default_factory=list)
    unexecuted_cells: int = 0
    runtime_line: str = ""

    @property
    def passed(self) -> bool:
        """Every code cell ran and none ended in an error, whatever its tags."""
        return not self.errors and self.unexecuted_cells == 0

    def summary(self) -> str:
        status = "PASS" if self.passed else "FAIL"
        detail = (
            self.errors[0].one_line()
            if self.errors
            else f"{self.unexecuted_cells} cells did not run"
            if self.unexecuted_cells
            else self.runtime_line or "ran to the end"
        )
        return f"{status} {self.source.name:<28} {self.seconds:6.1f}s  {detail}"


def tags(cell: Any) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def text_of(output: Any) -> str:
    if output.get("output_type") == "stream":
        return str(output.get("text", ""))
    return str(output.get("data", {}).get("text/plain", ""))


def inspect(source: Path, output: Path, seconds: float) -> Outcome:
    """Read an executed notebook back: its errors, unexecuted cells and runtime line."""
    nb = nbformat.read(output, as_version=4)
    nb.cells = [cell for cell in nb.cells if PAPERMILL_MARKER_TAG not in tags(cell)]
    nbformat.write(nb, output)
    errors: list[CellError] = []
    runtime_line = ""
    unexecuted = 0
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if cell.get("execution_count") is None and cell.source.strip():
            unexecuted += 1
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                errors.append(
                    CellError(
                        index=index,
                        execution_count=cell.get("execution_count"),
                        ename=out.get("ename", ""),
                        evalue=out.get("evalue", ""),
                    )
                )
            for line in text_of(out).splitlines():
                if line.startswith("Runtime: ") and not runtime_line:
                    runtime_line = line
    return Outcome(source, output, seconds, errors, unexecuted, runtime_line)


def execute(
    source: Path,
    output: Path,
    parameters: dict[str, Any] | None = None,
    cwd: Path | None = None,
    timeout_s: int = 1200,
    kernel_venv: Path | None = None,
) -> Outcome:
    """Run `source` with papermill into `output` (written even when a cell fails).

    Like Colab's "Run all": the `raises-exception` tag is ignored and execution stops at the
    first cell that ends in an error. The kernel is this Python's `python3` kernel, or with
    `kernel_venv` the one registered in that virtual environment (its folder goes first on
    JUPYTER_PATH for the run, so its `python3` kernel is found first).
    """
    import papermill

    output.parent.mkdir(parents=True, exist_ok=True)
    work_dir = cwd or output.parent
    work_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with kernel_of(kernel_venv):
        return _execute(papermill, source, output, parameters, work_dir, timeout_s, started)


@contextlib.contextmanager
def kernel_of(venv: Path | None):
    """Make `venv`'s registered `python3` kernel the one papermill finds, for the block."""
    if venv is None:
        yield
        return
    kernels = venv / "share" / "jupyter"
    if not (kernels / "kernels" / "python3" / "kernel.json").is_file():
        raise FileNotFoundError(f"{venv} has no python3 kernel: create it with `make run`")
    before = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(kernels), before]))
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = before


def _execute(papermill, source, output, parameters, work_dir, timeout_s, started) -> Outcome:
    try:
        papermill.execute_notebook(
            str(source),
            str(output),
            parameters=parameters or {},
            kernel_name="python3",
            cwd=str(work_dir),
            progress_bar=False,
            execution_timeout=timeout_s,
            force_raise_errors=True,  # nbclient: no tag lets a cell's error pass
            config=KERNEL_CONFIG,  # nbclient passes it on to the kernel manager
        )
    except papermill.PapermillExecutionError:
        pass  # judged below from the written notebook
    except Exception as error:
        if not output.exists():
            crash = CellError(-1, None, type(error).__name__, str(error))
            return Outcome(source, output, time.monotonic() - started, [crash])
    return inspect(source, output, time.monotonic() - started)


def parameter_errors(
    source: Path, parameter_sets: list[dict[str, Any]], cwd: Path, timeout_s: int = 600
) -> list[list[CellError]]:
    """The errors each set of parameters raises in `source`'s validation cell, in one kernel.

    A bad parameter must stop the notebook in the cell right after the `parameters` cell,
    before any strategy is built. Starting a kernel and importing TensorFlow for each bad
    value costs seconds apiece, so the cells before the `parameters` cell run once, then, for
    each set, the `parameters` cell (the defaults), the set's values (as papermill injects
    them) and the validation cell. A set that passes validation reports no error.
    """
    from nbclient import NotebookClient
    from papermill.translators import translate_parameters

    nb = nbformat.read(source, as_version=4)
    index = next(i for i, cell in enumerate(nb.cells) if "parameters" in tags(cell))
    defaults = nb.cells[index].source  # nbclient replaces nb.cells[i] by each cell it runs at i
    validation = next(cell for cell in nb.cells[index + 1 :] if cell.cell_type == "code").source
    setup = [(i, cell) for i, cell in enumerate(nb.cells[:index]) if cell.cell_type == "code"]
    cwd.mkdir(parents=True, exist_ok=True)
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=timeout_s,
        allow_errors=True,
        resources={"metadata": {"path": str(cwd)}},
        config=KERNEL_CONFIG,
    )
    results: list[list[CellError]] = []
    # The kernel talks over IPC sockets named relative to the working folder (KERNEL_CONFIG),
    # so this process must be in the kernel's folder, as papermill is while it executes.
    with contextlib.chdir(cwd), client.setup_kernel():
        for position, cell in setup:
            client.execute_cell(cell, position)
            setup_errors = _errors_of(cell, position)
            if setup_errors:
                return [setup_errors for _ in parameter_sets]
        for parameters in parameter_sets:
            injected = translate_parameters("python3", "python", parameters, "injected")
            cells = [nbformat.v4.new_code_cell(text) for text in (defaults, injected, validation)]
            errors = []
            for cell in cells:
                client.execute_cell(cell, index)
                errors += _errors_of(cell, index)
                if errors:
                    break
            results.append(errors)
    return results


def _errors_of(cell: Any, index: int) -> list[CellError]:
    return [
        CellError(index, cell.get("execution_count"), out.get("ename", ""), out.get("evalue", ""))
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]
