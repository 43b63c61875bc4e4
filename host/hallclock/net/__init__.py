"""The hall network: the Mosquitto broker's configuration and credentials
(broker), the host's MQTT side (mqtt: the paho client, the logger and
the viewers over it, a virtual clock's link to the broker, the unix-port
clock on the network) and the hall's TLS certificates (tls)."""
