from duet.cli import main

main()
