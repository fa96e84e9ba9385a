"""Network modules: encoder, positional encodings, heads."""

from .encoder import EncoderLayer, PatchEmbedding, SelfAttention, TransformerEncoder
from .heads import ClassificationModel, LeJEPAModel, ReconstructionModel
from .positional import POSITIONALS
from .whitebox import ARCHITECTURES, AttentionOnlyLayer, CRATELayer

__all__ = [
    "ARCHITECTURES",
    "POSITIONALS",
    "AttentionOnlyLayer",
    "CRATELayer",
    "ClassificationModel",
    "EncoderLayer",
    "LeJEPAModel",
    "PatchEmbedding",
    "ReconstructionModel",
    "SelfAttention",
    "TransformerEncoder",
]
