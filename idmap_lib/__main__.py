"""``python -m idmap_lib train|list|bench`` (also under ``torchrun --nproc_per_node=N -m idmap_lib
train``)."""
from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
