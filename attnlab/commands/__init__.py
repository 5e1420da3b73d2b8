"""One module per `attnlab` sub-command: each has add_arguments(parser) and run(args) -> exit code."""
