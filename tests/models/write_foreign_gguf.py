#!/usr/bin/env python3
"""Writes a small Qwen3 GGUF the way Python writers do, independently of kiln's
writer: no general.alignment key (default 32), counts as UINT32, token types
as INT32, tensors in converter order (not sorted), F32/F16 weights, tied
embeddings. Used to check that kiln loads files it did not write itself.

usage: write_foreign_gguf.py OUT.gguf [yarn | yarn-magnitude | mixed]
  yarn: also the rope.scaling keys of a YaRN-extended model (factor 4 over an
  original context of 128), as converters write them;
  yarn-magnitude: YaRN keys that leave the frequencies alone (factor 1,
  yarn_ext_factor 0) and scale only cos and sin (yarn_attn_factor 1.1);
  mixed: ffn_up in F32 beside an F16 ffn_gate, so the two cannot be packed
  into one matrix (the SiLU-times-up epilogue reads the gate's output)."""
import random
import struct
import sys

ALIGN = 32


def s(x):
    b = x.encode()
    return struct.pack('<Q', len(b)) + b


def kv(key, vtype, payload):
    return s(key) + struct.pack('<I', vtype) + payload


def arr(elem_type, items):
    return struct.pack('<IQ', elem_type, len(items)) + b''.join(items)


def main(path, variant=None):
    rnd = random.Random(1234)
    n_layer, n_embd, n_ff, n_head, n_kv, hd = 2, 128, 256, 2, 1, 64
    # Byte-level vocabulary: the 256 byte symbols in GPT-2 order, 3 merges,
    # and the ChatML control tokens.
    self_map = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or b >= 0xAE]
    others = [b for b in range(256) if b not in self_map]
    sym = {b: chr(b) for b in self_map}
    sym.update({b: chr(0x100 + i) for i, b in enumerate(others)})
    tokens = [sym[b] for b in self_map] + [sym[b] for b in others]
    merges = ['\u0120 t', 'h e', '\u0120t he']
    tokens += ['\u0120t', 'he', '\u0120the', '<|endoftext|>', '<|im_start|>', '<|im_end|>']
    types = [1] * (len(tokens) - 3) + [3, 3, 3]
    n_vocab = len(tokens)

    kvs = [
        kv('general.architecture', 8, s('qwen3')),
        kv('general.name', 8, s('foreign test model')),
        kv('qwen3.block_count', 4, struct.pack('<I', n_layer)),
        kv('qwen3.context_length', 4, struct.pack('<I', 512)),
        kv('qwen3.embedding_length', 4, struct.pack('<I', n_embd)),
        kv('qwen3.feed_forward_length', 4, struct.pack('<I', n_ff)),
        kv('qwen3.attention.head_count', 4, struct.pack('<I', n_head)),
        kv('qwen3.attention.head_count_kv', 4, struct.pack('<I', n_kv)),
        kv('qwen3.rope.freq_base', 6, struct.pack('<f', 1000000.0)),
        kv('qwen3.attention.layer_norm_rms_epsilon', 6, struct.pack('<f', 1e-6)),
        kv('qwen3.attention.key_length', 4, struct.pack('<I', hd)),
        kv('qwen3.attention.value_length', 4, struct.pack('<I', hd)),
        kv('general.file_type', 4, struct.pack('<I', 1)),
        kv('tokenizer.ggml.model', 8, s('gpt2')),
        kv('tokenizer.ggml.pre', 8, s('qwen2')),
        kv('tokenizer.ggml.tokens', 9, arr(8, [s(t) for t in tokens])),
        kv('tokenizer.ggml.token_type', 9, arr(5, [struct.pack('<i', t) for t in types])),
        kv('tokenizer.ggml.merges', 9, arr(8, [s(m) for m in merges])),
        kv('tokenizer.ggml.eos_token_id', 4, struct.pack('<I', n_vocab - 1)),
        kv('tokenizer.ggml.bos_token_id', 4, struct.pack('<I', n_vocab - 3)),
        kv('tokenizer.ggml.add_bos_token', 7, b'\x00'),
        kv('general.quantization_version', 4, struct.pack('<I', 2)),
    ]

    tensors = []  # (name, ne, type, bytes)

    def f32(name, ne, values):
        tensors.append((name, ne, 0, struct.pack('<%df' % len(values), *values)))

    def f16(name, ne, sigma):
        n = 1
        for d in ne:
            n *= d
        vals = [rnd.uniform(-sigma, sigma) for _ in range(n)]
        tensors.append((name, ne, 1, struct.pack('<%de' % n, *vals)))

    f16('token_embd.weight', [n_embd, n_vocab], 1.0)
    for i in range(n_layer):
        p = 'blk.%d.' % i
        f32(p + 'attn_norm.weight', [n_embd], [rnd.uniform(0.8, 1.2) for _ in range(n_embd)])
        f16(p + 'attn_q.weight', [n_embd, n_head * hd], n_embd ** -0.5 * 1.7)
        f16(p + 'attn_k.weight', [n_embd, n_kv * hd], n_embd ** -0.5 * 1.7)
        f16(p + 'attn_v.weight', [n_embd, n_kv * hd], n_embd ** -0.5 * 1.7)
        f32(p + 'attn_q_norm.weight', [hd], [rnd.uniform(0.8, 1.2) for _ in range(hd)])
        f32(p + 'attn_k_norm.weight', [hd], [rnd.uniform(0.8, 1.2) for _ in range(hd)])
        f16(p + 'attn_output.weight', [n_head * hd, n_embd], (n_head * hd) ** -0.5 * 1.7)
        f32(p + 'ffn_norm.weight', [n_embd], [rnd.uniform(0.8, 1.2) for _ in range(n_embd)])
        f16(p + 'ffn_gate.weight', [n_embd, n_ff], n_embd ** -0.5 * 1.7)
        if variant == 'mixed':
            f32(p + 'ffn_up.weight', [n_embd, n_ff],
                [rnd.uniform(-1, 1) * n_embd ** -0.5 * 1.7 for _ in range(n_embd * n_ff)])
        else:
            f16(p + 'ffn_up.weight', [n_embd, n_ff], n_embd ** -0.5 * 1.7)
        f16(p + 'ffn_down.weight', [n_ff, n_embd], n_ff ** -0.5 * 1.7)
    f32('output_norm.weight', [n_embd], [1.0] * n_embd)

    infos, offset = [], 0
    for name, ne, t, data in tensors:
        infos.append(s(name) + struct.pack('<I', len(ne)) + struct.pack('<%dq' % len(ne), *ne) +
                     struct.pack('<iQ', t, offset))
        offset += (len(data) + ALIGN - 1) // ALIGN * ALIGN
    if variant == 'yarn':
        kvs += [
            kv('qwen3.rope.scaling.type', 8, s('yarn')),
            kv('qwen3.rope.scaling.factor', 6, struct.pack('<f', 4.0)),
            kv('qwen3.rope.scaling.original_context_length', 4, struct.pack('<I', 128)),
        ]
    elif variant == 'yarn-magnitude':
        kvs += [
            kv('qwen3.rope.scaling.type', 8, s('yarn')),
            kv('qwen3.rope.scaling.factor', 6, struct.pack('<f', 1.0)),
            kv('qwen3.rope.scaling.yarn_ext_factor', 6, struct.pack('<f', 0.0)),
            kv('qwen3.rope.scaling.yarn_attn_factor', 6, struct.pack('<f', 1.1)),
        ]
    out = b'GGUF' + struct.pack('<IQQ', 3, len(tensors), len(kvs)) + b''.join(kvs) + b''.join(infos)
    out += b'\x00' * ((ALIGN - len(out) % ALIGN) % ALIGN)
    for _, _, _, data in tensors:
        out += data + b'\x00' * ((ALIGN - len(data) % ALIGN) % ALIGN)
    with open(path, 'wb') as f:
        f.write(out)


if __name__ == '__main__':
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] not in ('yarn', 'yarn-magnitude', 'mixed')):
        sys.exit('usage: write_foreign_gguf.py OUT.gguf [yarn | yarn-magnitude | mixed]')
    main(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else None)
