"""The hall and the round: the relay of the referee's signals to every
table (relay), running a round (round), configuring clocks over their
ports or the broker (configure), the web pages (webserver, referee:
the referee's console, display: the hall display) and the virtual hall
on the network (netsim).  The top of the house below the commands."""
