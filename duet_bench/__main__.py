from duet_bench.cli import main

main()
