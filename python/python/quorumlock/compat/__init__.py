"""Drop-in replacements for other Redlock libraries: ``compat.redlock`` (redlock-py) and
``compat.aioredlock`` (aioredlock). They translate arguments; the engine does the rest."""
