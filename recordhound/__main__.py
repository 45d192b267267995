from recordhound.cli import run

run()
