"""The bundle's entry point (PyInstaller runs this file as __main__): the same `attnlab` command as a pip install."""

import sys

from attnlab.cli import main

if __name__ == "__main__":
    sys.exit(main())
