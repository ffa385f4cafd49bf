"""Run the ``inspect`` CLI offline: mockllm's default outputs carry no token usage, so Inspect
counts tokens with tiktoken, which downloads its vocabulary. Tests replace that count with a
length-based estimate, then start the real CLI entry point (the ``inspect`` console script)."""

import sys

import inspect_ai.model._model as model_module
from inspect_ai._cli.main import main


async def _estimate(self, text: str) -> int:
    return max(1, len(text) // 4)


model_module.ModelAPI.count_text_tokens = _estimate  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.argv[0] = "inspect"
    main()
