"""``deonticbench serve-reward``: the reward as an HTTP server for OpenRLHF."""

from __future__ import annotations

import click

from ..errors import missing_extra
from ._options import timeout_option


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(1, 65535),
    default=8000,
    show_default=True,
    help="TCP port to listen on.",
)
@click.option(
    "--mode",
    type=click.Choice(["paper", "eval", "grounded"]),
    default="paper",
    show_default=True,
    help="paper: B.5.2's three-level reward; eval: the benchmark's own judging; grounded: "
    "correct and derived from the case's facts (labels need case_constants).",
)
@timeout_option()
@click.option(
    "--max-batches",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Batches scored at once: each POST /get_reward request is one batch of "
    "completions; later requests wait.",
)
@click.option(
    "--limit-concurrency",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Open connections beyond this are answered 503.",
)
@click.option(
    "--graceful",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    help="Seconds to let requests in flight finish on shutdown.",
)
def command(
    host: str,
    port: int,
    mode: str,
    timeout: float,
    max_batches: int,
    limit_concurrency: int,
    graceful: float,
) -> None:
    """Serve the reward in OpenRLHF's remote reward protocol (POST /get_reward, GET /health).

    Point OpenRLHF at it with --remote_rm_url http://HOST:PORT/get_reward and
    --label_key label (the label column of `deonticbench export --format trl-grpo`)."""
    try:
        # start-up: ``deonticbench --help`` imports every command's module
        from ..rewards.server import ServerSettings, bind, serve
    except ImportError as exc:
        raise missing_extra("the reward server", "train", package=exc.name) from None
    sock = bind(host, port)  # a busy port is one sentence, before any announcement
    click.echo(f"deonticbench reward server on http://{host}:{port} (mode {mode})", err=True)
    serve(
        host,
        port,
        settings=ServerSettings(mode=mode, timeout_s=timeout, max_batches=max_batches),  # type: ignore[arg-type]
        limit_concurrency=limit_concurrency,
        graceful_s=graceful,
        sock=sock,
    )
