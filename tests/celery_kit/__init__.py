"""Real Celery workers for the tests and the benchmark: the app, a stateless fake model server,
the tools, and starting/stopping worker processes."""
