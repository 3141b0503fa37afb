"""PyTorch equivalents of mimic's zoo models (same architectures and sizes) for CPU comparisons."""
import torch
import torch.nn as nn


def mlp(layers=3, hidden=1024, in_features=784, classes=10):
    mods, width = [], in_features
    for _ in range(layers - 1):
        mods += [nn.Linear(width, hidden), nn.ReLU()]
        width = hidden
    mods.append(nn.Linear(width, classes))
    return nn.Sequential(*mods), (in_features,), torch.float32


class Bert(nn.Module):
    def __init__(self, layers=12, hidden=768, heads=12, seq=128, vocab=30522):
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Parameter(torch.randn(seq, hidden) * 0.02)
        self.norm = nn.LayerNorm(hidden)
        layer = nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=False)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, ids):
        return self.encoder(self.norm(self.tokens(ids) + self.positions))


def build(name):
    """Returns (module, input shape without batch, input dtype)."""
    import torchvision
    if name == "mlp":
        return mlp()
    if name == "resnet50":
        return torchvision.models.resnet50(), (3, 224, 224), torch.float32
    if name == "resnet18":
        return torchvision.models.resnet18(), (3, 224, 224), torch.float32
    if name == "mobilenet_v2":
        return torchvision.models.mobilenet_v2(), (3, 224, 224), torch.float32
    if name == "bert":
        return Bert(), (128,), torch.int64
    raise ValueError(f"no PyTorch equivalent for {name}")


def example_input(shape, dtype, batch):
    if dtype == torch.int64:
        return torch.randint(0, 30522, (batch,) + shape)
    return torch.randn((batch,) + shape)
