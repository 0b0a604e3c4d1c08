"""Gradient compression for DistributedOptimizer and allreduce (Horovod's
horovod.torch.compression): cast floating tensors to 16 bits for the wire
and back afterwards."""
import torch


class Compressor:
    """Interface: compress(tensor) -> (tensor, ctx); decompress(tensor, ctx) -> tensor."""

    @staticmethod
    def compress(tensor):
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    """Sends tensors as they are."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


def _caster(wire_dtype):
    class _Cast(Compressor):
        @staticmethod
        def compress(tensor):
            if tensor.dtype.is_floating_point and tensor.dtype != wire_dtype:
                return tensor.type(wire_dtype), tensor.dtype
            return tensor, None

        @staticmethod
        def decompress(tensor, ctx):
            return tensor if ctx is None else tensor.type(ctx)

    return _Cast


class FP16Compressor(_caster(torch.float16)):
    """Casts floating tensors to float16 for the wire."""


class BF16Compressor(_caster(torch.bfloat16)):
    """Casts floating tensors to bfloat16 for the wire."""


class Compression:
    """Horovod's names: Compression.none, Compression.fp16 (and bf16)."""

    none = NoneCompressor
    fp16 = FP16Compressor
    bf16 = BF16Compressor
