"""Network modules: encoder, positional encodings, heads."""

from .encoder import EncoderLayer, PatchEmbedding, SelfAttention, TransformerEncoder
from .heads import ClassificationModel, ReconstructionModel
from .positional import POSITIONALS

__all__ = [
    "POSITIONALS",
    "ClassificationModel",
    "EncoderLayer",
    "PatchEmbedding",
    "ReconstructionModel",
    "SelfAttention",
    "TransformerEncoder",
]
