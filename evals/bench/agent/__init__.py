"""The agent's side of a sample: its loop, tools, prompt, lessons, recipe and stop condition."""
