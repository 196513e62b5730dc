#include "compiler/codegen/weight_decoder.h"

namespace kiln::codegen {

using llvm::Value;

namespace {

// prmt selector placing byte k of `a` in byte 2 over b = 0x3F000000:
// result = 0x3F_kk_00_00 = 0.5 + q/256 for q < 128.
uint32_t CodeSelector(int k) { return 0x7054u | (uint32_t(k) << 8); }
// prmt selector placing byte k of `a` in byte 0 over b = 0x4B000000:
// result = 2^23 + byte.
uint32_t Byte23Selector(int k) { return 0x7540u | uint32_t(k); }

// Four 4..6-bit codes (one per byte of `bytes`) -> f = 0.5 + q/256.
std::array<Value*, 4> SmallCodes(KernelBuilder& kb, Value* bytes) {
  std::array<Value*, 4> f;
  for (int k = 0; k < 4; ++k) f[k] = kb.AsFloat(kb.Prmt(bytes, kb.I32c(0x3F000000), CodeSelector(k)));
  return f;
}

// Four int8 codes -> exact floats.
std::array<Value*, 4> Int8Codes(KernelBuilder& kb, Value* word) {
  Value* u = kb.b().CreateXor(word, kb.I32c(0x80808080u));
  std::array<Value*, 4> f;
  for (int k = 0; k < 4; ++k)
    f[k] = kb.b().CreateFSub(kb.AsFloat(kb.Prmt(u, kb.I32c(0x4B000000), Byte23Selector(k))),
                             kb.F32c(8388736.0f));  // 2^23 + 128
  return f;
}

// Two i16 reads -> one little-endian word.
Value* Word(KernelBuilder& kb, Value* lo16, Value* hi16) {
  return kb.Prmt(kb.b().CreateZExt(lo16, kb.I32()), kb.b().CreateZExt(hi16, kb.I32()), 0x5410u);
}

// Small unsigned byte value (0..255, in the low byte of v) -> float.
Value* ByteToFloat(KernelBuilder& kb, Value* v, int k) {
  return kb.b().CreateFSub(kb.AsFloat(kb.Prmt(v, kb.I32c(0x4B000000), Byte23Selector(k))),
                           kb.F32c(8388608.0f));
}

// The 6-bit scales and mins of sub-blocks 2c and 2c+1 of a Q4_K/Q5_K
// super-block (get_scale_min_k4, spec/quant-formats.md §4.1). h1..h3 are the
// 12 scale bytes as words; c is 0..3. Returns {sc0, sc1, m0, m1} as floats.
std::array<Value*, 4> ScaleMinPair(KernelBuilder& kb, Value* h1, Value* h2, Value* h3, Value* c) {
  auto& b = kb.b();
  Value* sh = b.CreateShl(b.CreateAnd(c, kb.I32c(1)), kb.I32c(4));  // 8 * (2c & 3)
  Value* t1 = b.CreateLShr(h1, sh);
  Value* t2 = b.CreateLShr(h2, sh);
  Value* t3 = b.CreateLShr(h3, sh);
  // Sub-blocks 0..3: sc = s[j] & 63, m = s[j+4] & 63.
  Value* sc_lo = b.CreateAnd(t1, kb.I32c(0x3F3F));
  Value* m_lo = b.CreateAnd(t2, kb.I32c(0x3F3F));
  // Sub-blocks 4..7: sc = (s[j+4] & 15) | (s[j-4] >> 6) << 4,
  //                  m  = (s[j+4] >> 4) | (s[j] >> 6) << 4.
  Value* sc_hi = kb.AndOr(t3, 0x0F0F, b.CreateAnd(b.CreateLShr(t1, kb.I32c(2)), kb.I32c(0x3030)));
  Value* m_hi = kb.AndOr(b.CreateLShr(t3, kb.I32c(4)), 0x0F0F,
                         b.CreateAnd(b.CreateLShr(t2, kb.I32c(2)), kb.I32c(0x3030)));
  Value* hi = b.CreateICmpUGE(c, kb.I32c(2));
  Value* sc = b.CreateSelect(hi, sc_hi, sc_lo);
  Value* m = b.CreateSelect(hi, m_hi, m_lo);
  return {ByteToFloat(kb, sc, 0), ByteToFloat(kb, sc, 1), ByteToFloat(kb, m, 0), ByteToFloat(kb, m, 1)};
}

Value* RowOffset(KernelBuilder& kb, Value* row, Value* bytes_i32) {
  return kb.Gep(row, kb.b().CreateZExt(bytes_i32, kb.I64()));
}

// Q6_K's quarters (spec/quant-formats.md §7) of a piece whose columns in
// each quarter are col + 4j, j over the words of each array: quarter k
// holds columns col + 32k + 4j, its low 4 bits in ql_lo (k = 0, 2: low,
// high nibbles) or ql_hi (k = 1, 3), its high 2 bits at bits 2k..2k+1 of
// qh's bytes. scale_byte(k) has the quarter's signed scale byte in its low
// 8 bits; d is the block's super-scale.
struct Q6KWords {
  std::vector<Value*> ql_lo, ql_hi, qh;
};
std::vector<Segment> Q6KQuarters(KernelBuilder& kb, const Q6KWords& w, Value* col, Value* d,
                                 const std::function<Value*(int)>& scale_byte) {
  auto& b = kb.b();
  std::vector<Segment> segs;
  for (int k = 0; k < 4; ++k) {
    Segment s;
    for (size_t j = 0; j < w.ql_lo.size(); ++j) {
      Value* lo;
      Value* hi;
      switch (k) {
        case 0:
          lo = w.ql_lo[j];
          hi = b.CreateShl(w.qh[j], kb.I32c(4));
          break;
        case 1:
          lo = w.ql_hi[j];
          hi = b.CreateShl(w.qh[j], kb.I32c(2));
          break;
        case 2:
          lo = b.CreateLShr(w.ql_lo[j], kb.I32c(4));
          hi = w.qh[j];
          break;
        default:
          lo = b.CreateLShr(w.ql_hi[j], kb.I32c(4));
          hi = b.CreateLShr(w.qh[j], kb.I32c(2));
          break;
      }
      Value* code = kb.AndOr(lo, 0x0F0F0F0F, b.CreateAnd(hi, kb.I32c(0x30303030)));
      Quad q;
      q.col = b.CreateAdd(col, kb.I32c(32 * k + 4 * static_cast<int>(j)));
      q.f = SmallCodes(kb, code);
      q.word = code;
      s.quads.push_back(q);
    }
    // Signed 8-bit scale: (byte ^ 0x80) = byte + 128 as an unsigned value.
    Value* sbyte = b.CreateAnd(scale_byte(k), kb.I32c(0xFF));
    Value* scf = b.CreateFSub(kb.AsFloat(b.CreateOr(b.CreateXor(sbyte, kb.I32c(0x80)), kb.I32c(0x4B000000))),
                              kb.F32c(8388736.0f));
    s.scale = b.CreateFMul(d, scf);  // y = (d * sc) * q
    s.c0 = 0.5f;
    s.inv_c1 = 256.0f;
    s.q_offset = -32;
    segs.push_back(s);
  }
  return segs;
}

}  // namespace

WeightDecoder::WeightDecoder(WeightFormat format) : format_(format), geo_(GetFormatGeometry(format)) {}

std::vector<Value*> WeightDecoder::Load(KernelBuilder& kb, const PieceRef& ref, const U16Reader* reader,
                                        const DirectFetch* fetch) const {
  auto& b = kb.b();
  std::vector<Value*> raw;
  auto append = [&](const std::vector<Value*>& v) { raw.insert(raw.end(), v.begin(), v.end()); };
  auto load16 = [&](Value* address) {
    return fetch ? (*fetch)(address, 16, RowPlane::kData) : kb.LoadNc4xI32(address);
  };
  auto load_scale16 = [&](Value* address) {  // a planar format's scale-plane entry
    return fetch ? (*fetch)(address, 2, RowPlane::kScales)[0] : kb.LoadNc(kb.I16(), address, 2);
  };
  Value* p = ref.piece;
  switch (format_) {
    case WeightFormat::kF32:
    case WeightFormat::kF16:
    case WeightFormat::kBF16:
      append(load16(RowOffset(kb, ref.row, b.CreateShl(p, kb.I32c(4)))));
      break;
    case WeightFormat::kQ8_0Planar: {
      Value* off = b.CreateShl(p, kb.I32c(5));
      append(load16(RowOffset(kb, ref.row, off)));
      append(load16(RowOffset(kb, ref.row, b.CreateAdd(off, kb.I32c(16)))));
      raw.push_back(load_scale16(RowOffset(kb, ref.scale_row, b.CreateShl(p, kb.I32c(1)))));
      break;
    }
    case WeightFormat::kQ4_K:
    case WeightFormat::kQ5_K: {
      Value* sb = b.CreateLShr(p, kb.I32c(2));
      Value* c = b.CreateAnd(p, kb.I32c(3));
      Value* base = b.CreateMul(sb, kb.I32c(geo_.block_bytes));
      append(load16(RowOffset(kb, ref.row, base)));  // d, dmin, scales
      int qs = 16;
      if (format_ == WeightFormat::kQ5_K) {
        append(load16(RowOffset(kb, ref.row, b.CreateAdd(base, kb.I32c(16)))));  // qh[0..15]
        append(load16(RowOffset(kb, ref.row, b.CreateAdd(base, kb.I32c(32)))));  // qh[16..31]
        qs = 48;
      }
      Value* q = b.CreateAdd(base, b.CreateAdd(kb.I32c(qs), b.CreateShl(c, kb.I32c(5))));
      append(load16(RowOffset(kb, ref.row, q)));
      append(load16(RowOffset(kb, ref.row, b.CreateAdd(q, kb.I32c(16)))));
      break;
    }
    case WeightFormat::kQ6_KPlanar: {
      // Piece p: block p/4, half h = (p/2) mod 2, l = 16 (p mod 2): ql
      // bytes 64h + l and 64h + 32 + l, qh bytes 32h + l (16 each), the
      // half's 8 scales, then d from the d plane.
      Value* sb = b.CreateLShr(p, kb.I32c(2));
      Value* h = b.CreateAnd(b.CreateLShr(p, kb.I32c(1)), kb.I32c(1));
      Value* l = b.CreateShl(b.CreateAnd(p, kb.I32c(1)), kb.I32c(4));
      Value* base = b.CreateMul(sb, kb.I32c(geo_.block_bytes));
      Value* ql = b.CreateAdd(base, b.CreateAdd(b.CreateShl(h, kb.I32c(6)), l));
      append(load16(RowOffset(kb, ref.row, ql)));
      append(load16(RowOffset(kb, ref.row, b.CreateAdd(ql, kb.I32c(32)))));
      Value* qh = b.CreateAdd(base, b.CreateAdd(kb.I32c(128), b.CreateAdd(b.CreateShl(h, kb.I32c(5)), l)));
      append(load16(RowOffset(kb, ref.row, qh)));
      // The half's 8 scales (bytes 192 + 8h, 8-byte aligned), then d.
      Value* sc = RowOffset(kb, ref.row, b.CreateAdd(base, b.CreateAdd(kb.I32c(192), b.CreateShl(h, kb.I32c(3)))));
      if (fetch) {
        append((*fetch)(sc, 8, RowPlane::kData));
      } else {
        Value* sc2 = kb.LoadNc(llvm::FixedVectorType::get(kb.I32(), 2), sc, 8);
        for (int i = 0; i < 2; ++i) raw.push_back(b.CreateExtractElement(sc2, uint64_t(i)));
      }
      raw.push_back(load_scale16(RowOffset(kb, ref.scale_row, b.CreateShl(sb, kb.I32c(1)))));
      break;
    }
    case WeightFormat::kQ8_0: {
      // d, then 32 quants at byte 2.
      const U16Reader& rd = *reader;
      raw.push_back(rd(p, kb.I32c(0)));
      for (int i = 0; i < 16; ++i) raw.push_back(rd(p, kb.I32c(2 + 2 * i)));
      break;
    }
    case WeightFormat::kQ4_0: {
      const U16Reader& rd = *reader;
      raw.push_back(rd(p, kb.I32c(0)));
      for (int i = 0; i < 8; ++i) raw.push_back(rd(p, kb.I32c(2 + 2 * i)));
      break;
    }
    case WeightFormat::kQ6_K: {
      const U16Reader& rd = *reader;
      Value* sb = b.CreateLShr(p, kb.I32c(3));
      Value* part = b.CreateAnd(p, kb.I32c(7));
      Value* h = b.CreateLShr(part, kb.I32c(2));
      Value* l8 = b.CreateShl(b.CreateAnd(part, kb.I32c(3)), kb.I32c(3));
      Value* ql = b.CreateAdd(b.CreateShl(h, kb.I32c(6)), l8);                       // 64h + l8
      Value* qh = b.CreateAdd(kb.I32c(128), b.CreateAdd(b.CreateShl(h, kb.I32c(5)), l8));  // 128 + 32h + l8
      Value* sc = b.CreateAdd(kb.I32c(192), b.CreateShl(h, kb.I32c(3)));             // 192 + 8h
      for (int i = 0; i < 4; ++i) raw.push_back(rd(sb, b.CreateAdd(ql, kb.I32c(2 * i))));
      for (int i = 0; i < 4; ++i) raw.push_back(rd(sb, b.CreateAdd(ql, kb.I32c(32 + 2 * i))));
      for (int i = 0; i < 4; ++i) raw.push_back(rd(sb, b.CreateAdd(qh, kb.I32c(2 * i))));
      for (int k = 0; k < 4; ++k) raw.push_back(rd(sb, b.CreateAdd(sc, kb.I32c(2 * k))));
      raw.push_back(rd(sb, kb.I32c(208)));
      break;
    }
  }
  return raw;
}

std::vector<Segment> WeightDecoder::Decode(KernelBuilder& kb, const PieceRef& ref,
                                           const std::vector<Value*>& raw) const {
  auto& b = kb.b();
  Value* p = ref.piece;
  std::vector<Segment> segs;
  switch (format_) {
    case WeightFormat::kF32: {
      Segment s;
      Quad q;
      q.col = b.CreateShl(p, kb.I32c(2));
      for (int i = 0; i < 4; ++i) q.f[i] = kb.AsFloat(raw[i]);
      s.quads.push_back(q);
      segs.push_back(s);
      break;
    }
    case WeightFormat::kF16:
    case WeightFormat::kBF16: {
      Segment s;
      Value* col = b.CreateShl(p, kb.I32c(3));
      for (int j = 0; j < 2; ++j) {
        Quad q;
        q.col = b.CreateAdd(col, kb.I32c(4 * j));
        for (int i = 0; i < 2; ++i) {
          Value* w = raw[2 * j + i];
          if (format_ == WeightFormat::kF16) {
            q.f[2 * i] = kb.HalfToFloat(b.CreateTrunc(w, kb.I16()));
            q.f[2 * i + 1] = kb.HalfToFloat(b.CreateTrunc(b.CreateLShr(w, kb.I32c(16)), kb.I16()));
          } else {
            q.f[2 * i] = kb.AsFloat(b.CreateShl(w, kb.I32c(16)));
            q.f[2 * i + 1] = kb.AsFloat(b.CreateAnd(w, kb.I32c(0xFFFF0000u)));
          }
        }
        s.quads.push_back(q);
      }
      segs.push_back(s);
      break;
    }
    case WeightFormat::kQ8_0Planar:
    case WeightFormat::kQ8_0: {
      Segment s;
      Value* col = b.CreateShl(p, kb.I32c(5));
      std::vector<Value*> words;
      Value* d;
      if (format_ == WeightFormat::kQ8_0Planar) {
        words.assign(raw.begin(), raw.begin() + 8);
        d = raw[8];
      } else {
        d = raw[0];
        for (int j = 0; j < 8; ++j) words.push_back(Word(kb, raw[1 + 2 * j], raw[2 + 2 * j]));
      }
      for (int j = 0; j < 8; ++j) {
        Quad q;
        q.col = b.CreateAdd(col, kb.I32c(4 * j));
        q.f = Int8Codes(kb, words[j]);
        q.word = words[j];
        s.quads.push_back(q);
      }
      s.signed_codes = true;
      s.scale = kb.HalfToFloat(d);
      segs.push_back(s);
      break;
    }
    case WeightFormat::kQ4_0: {
      Segment s;
      Value* col = b.CreateShl(p, kb.I32c(5));
      std::vector<Value*> words;
      for (int j = 0; j < 4; ++j) words.push_back(Word(kb, raw[1 + 2 * j], raw[2 + 2 * j]));
      for (int half = 0; half < 2; ++half) {
        for (int j = 0; j < 4; ++j) {
          Quad q;
          q.col = b.CreateAdd(col, kb.I32c(16 * half + 4 * j));
          Value* w = half == 0 ? words[j] : b.CreateLShr(words[j], kb.I32c(4));
          q.word = b.CreateAnd(w, kb.I32c(0x0F0F0F0F));
          q.f = SmallCodes(kb, q.word);
          s.quads.push_back(q);
        }
      }
      s.scale = kb.HalfToFloat(raw[0]);
      s.c0 = 0.5f;
      s.inv_c1 = 256.0f;
      s.q_offset = -8;
      segs.push_back(s);
      break;
    }
    case WeightFormat::kQ4_K:
    case WeightFormat::kQ5_K: {
      bool q5 = format_ == WeightFormat::kQ5_K;
      Value* sb = b.CreateLShr(p, kb.I32c(2));
      Value* c = b.CreateAnd(p, kb.I32c(3));
      Value* h0 = raw[0];
      Value* d = kb.HalfToFloat(b.CreateTrunc(h0, kb.I16()));
      Value* dmin = kb.HalfToFloat(b.CreateTrunc(b.CreateLShr(h0, kb.I32c(16)), kb.I16()));
      std::array<Value*, 4> sm = ScaleMinPair(kb, raw[1], raw[2], raw[3], c);
      int qs = q5 ? 12 : 4;  // index of the first qs word in raw
      Value* col = b.CreateAdd(b.CreateShl(sb, kb.I32c(8)), b.CreateShl(c, kb.I32c(6)));  // 256 sb + 64 c
      Value* g0 = b.CreateShl(c, kb.I32c(1));
      for (int half = 0; half < 2; ++half) {  // sub-block 2c (low nibbles), 2c+1 (high)
        Segment s;
        for (int j = 0; j < 8; ++j) {
          Value* w = raw[qs + j];
          Value* nib = half == 0 ? w : b.CreateLShr(w, kb.I32c(4));
          Value* code;
          Value* word = nullptr;  // the dp4a operand, when not `code`
          if (q5) {
            // 5th bit: bit g of qh[l] (spec §6), moved to bit 4 of each byte.
            Value* qhw = raw[4 + j];
            Value* g = half == 0 ? g0 : b.CreateAdd(g0, kb.I32c(1));
            Value* hb = b.CreateAnd(b.CreateShl(b.CreateLShr(qhw, g), kb.I32c(4)), kb.I32c(0x10101010));
            code = kb.AndOr(nib, 0x0F0F0F0F, hb);
          } else {
            code = b.CreateAnd(nib, kb.I32c(0x0F0F0F0F));
            // High nibbles in place (16 q a byte, at most 240): no shift.
            if (half == 1) word = b.CreateAnd(w, kb.I32c(0xF0F0F0F0u));
          }
          Quad q;
          q.col = b.CreateAdd(col, kb.I32c(32 * half + 4 * j));
          q.f = SmallCodes(kb, code);  // float paths: f needs q < 128
          q.word = word != nullptr ? word : code;
          s.quads.push_back(q);
        }
        // y = (d * sc) * q - (dmin * m)
        s.scale = b.CreateFMul(d, sm[half]);
        if (half == 1 && !q5) s.word_scale = b.CreateFMul(s.scale, kb.F32c(1.0f / 16.0f));  // exact
        s.offset = b.CreateFNeg(b.CreateFMul(dmin, sm[2 + half]));
        s.c0 = 0.5f;
        s.inv_c1 = 256.0f;
        segs.push_back(s);
      }
      break;
    }
    case WeightFormat::kQ6_K: {
      Value* sb = b.CreateLShr(p, kb.I32c(3));
      Value* part = b.CreateAnd(p, kb.I32c(7));
      Value* h = b.CreateLShr(part, kb.I32c(2));
      Value* l8 = b.CreateShl(b.CreateAnd(part, kb.I32c(3)), kb.I32c(3));
      // Scale byte 8h + 2k + (l8 >= 16): low or high byte of the i16 read.
      Value* sc_shift = b.CreateSelect(b.CreateICmpUGE(l8, kb.I32c(16)), kb.I32c(8), kb.I32c(0));
      Q6KWords w;
      for (int j = 0; j < 2; ++j) {
        w.ql_lo.push_back(Word(kb, raw[2 * j], raw[2 * j + 1]));
        w.ql_hi.push_back(Word(kb, raw[4 + 2 * j], raw[5 + 2 * j]));
        w.qh.push_back(Word(kb, raw[8 + 2 * j], raw[9 + 2 * j]));
      }
      Value* col = b.CreateAdd(b.CreateShl(sb, kb.I32c(8)), b.CreateAdd(b.CreateShl(h, kb.I32c(7)), l8));
      segs = Q6KQuarters(kb, w, col, kb.HalfToFloat(raw[16]), [&](int k) {
        return b.CreateLShr(b.CreateZExt(raw[12 + k], kb.I32()), sc_shift);
      });
      break;
    }
    case WeightFormat::kQ6_KPlanar: {
      // raw: ql[64h + 16lo ..], ql[64h + 32 + 16lo ..], qh[32h + 16lo ..]
      // (4 words each), the half's 8 scales (2 words), d.
      Value* sb = b.CreateLShr(p, kb.I32c(2));
      Value* h = b.CreateAnd(b.CreateLShr(p, kb.I32c(1)), kb.I32c(1));
      Value* lo = b.CreateAnd(p, kb.I32c(1));
      Q6KWords w;
      w.ql_lo.assign(raw.begin(), raw.begin() + 4);
      w.ql_hi.assign(raw.begin() + 4, raw.begin() + 8);
      w.qh.assign(raw.begin() + 8, raw.begin() + 12);
      // Quarter k's scale is the half's byte 2k + lo: word k / 2, byte
      // 2(k mod 2) + lo of it.
      Value* sw[2] = {raw[12], raw[13]};
      Value* lo_shift = b.CreateShl(lo, kb.I32c(3));
      Value* col = b.CreateAdd(b.CreateShl(sb, kb.I32c(8)),
                               b.CreateAdd(b.CreateShl(h, kb.I32c(7)), b.CreateShl(lo, kb.I32c(4))));
      segs = Q6KQuarters(kb, w, col, kb.HalfToFloat(raw[14]), [&](int k) {
        return b.CreateLShr(sw[k / 2], b.CreateAdd(lo_shift, kb.I32c(16 * (k % 2))));
      });
      break;
    }
  }
  return segs;
}

Value* WeightDecoder::ExactWeight(KernelBuilder& kb, const Segment& seg, Value* f) const {
  auto& b = kb.b();
  Value* q = f;
  if (seg.c0 != 0.0f) q = b.CreateFSub(q, kb.F32c(seg.c0));
  if (seg.inv_c1 != 1.0f) q = b.CreateFMul(q, kb.F32c(seg.inv_c1));
  if (seg.q_offset != 0) q = b.CreateFAdd(q, kb.F32c(static_cast<float>(seg.q_offset)));
  Value* w = seg.scale != nullptr ? b.CreateFMul(seg.scale, q) : q;
  if (seg.offset != nullptr) w = b.CreateFAdd(w, seg.offset);
  return w;
}

}  // namespace kiln::codegen
