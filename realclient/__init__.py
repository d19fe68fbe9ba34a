"""A real Mooncake Store client (PyPI 0.3.13.post1) driven from a test: the worker process
(:mod:`realclient.worker`), the handle a driver holds (:mod:`realclient.handle`), the recording
proxy used for wire captures (:mod:`realclient.proxy`). Everything here runs inside a private
network namespace (see ``conformance.net``)."""
