"""简单的 torch.ops.mxrec.hstu_dense 调用示例"""

# The user's example of shared/seeds/000 §1.5, verbatim (its indentation, lost in the document's
# text, restored), with only its own two omissions added: `import numpy as np` and `mask_tril`
# (the mask type whose mask is the lower triangle, 0). Run by verify/gr/test_npu_hstu.py (on npu)
# and tests/plugin/test_hstu.py (on CPU) with runpy, as a script.
import numpy as np
import torch

mask_tril = 0


def simple_hstu_dense_example():
    # 定义参数
    batch_size = 2
    max_seq_len = 4
    head_num = 2
    head_dim = 8
    data_type = torch.float32
    mask_type = 0  # 假设的掩码类型
    """
    mask_type = 0:使用内置倒三角mask 不需要传递mask输入;
    mask_type = 1:使用内置上三角mask 不需要传递mask输入,暂不支持;
    mask_type = 2:不使用mask;
    mask_type = 3:使用用户自定义mask 此时mask输入需要用户定义并传入
    """
    silu_scale = 1.0  # SiLU激活函数的缩放因子
    device_id = 0  # 假设的设备ID  # noqa: F841

    # 生成jagged类型的随机张量
    def jagged_data_gen(batch_size, max_seq_len, num_heads, attention_dim, data_type, mask_type):
        """
        batch_size (int): 批处理大小,表示每个批次中的样本数量;
        max_seq_len (int): 序列的最大长度,用于生成随机序列长度的上限;
        num_heads (int): 注意力机制中的头数,表示多头注意力的数量;
        attention_dim (int): 注意力维度,表示每个注意力头的维度大小;
        data_type (torch.dtype): 数据类型,指定生成张量的数据类型,如torch.float32;
        mask_type (int): 掩码类型;
        """
        seq_lens = np.random.randint(1, max_seq_len + 1, (batch_size))
        seq_offset = (
            torch.concat(
                (
                    torch.zeros((1,), dtype=torch.int64),
                    torch.cumsum(torch.from_numpy(seq_lens), axis=0),
                )
            )
            .to(torch.int64)
            .numpy()
        )
        max_seq_len = np.max(seq_lens)
        total_seqs = np.sum(seq_lens)
        q = torch.rand(total_seqs, num_heads, attention_dim).to(torch.float32)
        q = q.uniform_(-1, 1)
        k = torch.rand(total_seqs, num_heads, attention_dim).to(torch.float32)
        k = k.uniform_(-1, 1)
        v = torch.rand(total_seqs, num_heads, attention_dim).to(torch.float32)
        v = v.uniform_(-1, 1)
        # 生成mask
        if mask_type == mask_tril:
            invalid_attn_mask = 1 - torch.triu(
                torch.ones(batch_size, num_heads, max_seq_len, max_seq_len), diagonal=1
            )
        else:
            invalid_attn_mask = torch.randint(
                0, 2, size=(batch_size, num_heads, max_seq_len, max_seq_len)
            )
        invalid_attn_mask = invalid_attn_mask.cpu().to(torch.float32)
        return q, k, v, seq_offset, invalid_attn_mask, max_seq_len

    # 生成输入张量
    q, k, v, seq_offset, mask, max_seq_len = jagged_data_gen(
        batch_size, max_seq_len, head_num, head_dim, data_type, mask_type
    )
    # 调用 hstu_dense 操作
    output = torch.ops.mxrec.hstu_dense(
        q, k, v, mask, None, mask_type, max_seq_len, silu_scale, "jagged", seq_offset
    )
    return output


# 运行示例
if __name__ == "__main__":
    result = simple_hstu_dense_example()
