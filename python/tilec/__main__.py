"""`python -m tilec …` is the `tilec` command line."""
from . import main

main()
