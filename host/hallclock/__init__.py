"""hallclock host: the command line (cli, commands), the link and the log
(link), the virtual board and the VMs (vboard), the views and reports
(views), the hall network (net), and the hall and the round (hall), over a
few base modules (errors, catalog, scenario); docs/design.md draws them."""
__version__ = "0.1.0"
