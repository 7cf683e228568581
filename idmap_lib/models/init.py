"""He (MSRA) initialisation as in the official code (fb.resnet.torch, resnet-1k-layers).

Convolutions: normal(0, sqrt(2 / (k*k*out_channels))), i.e. Kaiming normal with fan_out.
BatchNorm: weight 1, bias 0. Linear layers keep PyTorch's default, which equals Torch7's
(uniform +-1/sqrt(fan_in)), with zero bias. A conv bias starts at 0 unless the module carries
`init_bias` (the gate bias b_g of Paper A Fig 2(c, d)).
"""

import torch.nn as nn


def he_init(model):
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            if m.bias is not None:
                nn.init.constant_(m.bias, getattr(m, "init_bias", 0.0))
        elif isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)
    return model
