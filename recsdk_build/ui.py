"""Console output: human progress on stderr, an optional JSON summary on stdout."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from rich.console import Console


@dataclass
class UI:
    verbose: bool = False
    json_mode: bool = False
    console: Console = field(default_factory=lambda: Console(stderr=True, highlight=False))

    def info(self, message: str) -> None:
        self.console.print(message)

    def detail(self, message: str) -> None:
        """Only shown with --verbose."""
        if self.verbose:
            self.console.print(f"[dim]{message}[/dim]")

    def warn(self, message: str) -> None:
        self.console.print(f"[yellow]warning:[/yellow] {message}")

    def error(self, message: str, hint: str | None = None) -> None:
        self.console.print(f"[bold red]error:[/bold red] {message}")
        if hint:
            self.console.print(f"[dim]hint:[/dim] {hint}")

    @contextmanager
    def status(self, message: str) -> Iterator[None]:
        """A spinner for a long step; in verbose mode the step's output streams instead."""
        if self.verbose or not self.console.is_terminal:
            self.console.print(f"  … {message}")
            yield
            return
        with self.console.status(message):
            yield
