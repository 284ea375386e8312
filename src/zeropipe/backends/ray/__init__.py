"""The Ray backend: the same workers as Ray actors. `driver.py` is the driver's side, `actor.py`
the actor, `session.py` the connection to Ray (a private instance or a cluster).
"""
