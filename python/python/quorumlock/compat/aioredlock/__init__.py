from .algorithm import *  # noqa: F403 (temporary)
