from workrail.launch import run

run()
