"""Edge services that look at the machine the server runs on (chosen in workrail/app.py)."""
