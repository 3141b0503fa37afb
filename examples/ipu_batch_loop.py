#!/usr/bin/env python3
"""The batch-size loop IPU users write: compile (without running) at growing batch sizes until the
model no longer fits the tiles' memory, and report the largest batch that fits.

On an out-of-memory compile, mimic raises mimic.OutOfMemoryError with Poplar's wording and the
tile, bytes and op that overflowed.
"""
import mimic


def main(model_name="resnet50", batches=(8, 16, 32, 64, 128), preset="gc200"):
    largest = None
    with mimic.ipu.Manager(num_ipus=1, precision="float32", memory_proportion=0.6, compile_only=True,
                           preset=preset) as ipu:
        for batch in batches:
            model = getattr(mimic.zoo, model_name)(batch=batch)
            try:
                compiled = ipu.compile_model(model)
            except mimic.OutOfMemoryError as e:
                print(f"batch {batch:4d}: does not fit: {e}")
                print(f"            tile {e.tile}, {e.bytes_used} bytes used of {e.bytes_available}, op {e.op}")
                break
            metrics = compiled.compile_report["metrics"]
            print(f"batch {batch:4d}: fits (fullest tile {metrics['max_tile_bytes']:,.0f} of "
                  f"{metrics['tile_sram_bytes']:,.0f} bytes, {metrics['memory_used_fraction']:.0%} of all tile memory)")
            largest = batch
    print(f"largest batch that fits on one {preset}: {largest}")
    return largest


if __name__ == "__main__":
    main()
