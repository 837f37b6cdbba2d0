"""Code that runs inside the sandbox containers (model gateway, egress proxy addon, supervisor).

Kept small and free of imports from `omnidr` other than shared models, so images stay small.
"""
