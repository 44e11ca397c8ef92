"""A Kubernetes test cluster without containers, driven through the real engine (cluster.py
says what it is; fixtures.py gives it to tests)."""
