import sys

from lockstudy.cli import main

sys.exit(main(sys.argv[1:]))
