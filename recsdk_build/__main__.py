from recsdk_build.cli import main

main()
