// SPDX-License-Identifier: Apache-2.0
// Check values of the crypto helpers the signer and the store build on.

#include "tfork/crypto/hash.hpp"

#include <catch2/catch.hpp>

#include <string>

namespace tfork::crypto {

TEST_CASE("digests match their published check values", "[crypto]") {
  // FIPS 180-2 appendix B.1 ("abc"), RFC 1321 §A.5, RFC 3174 §7.3.
  CHECK(to_hex(sha256("abc")) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(to_hex(md5("")) == "d41d8cd98f00b204e9800998ecf8427e");
  CHECK(to_hex(md5("abc")) == "900150983cd24fb0d6963f7d28e17f72");
  CHECK(to_hex(sha1("abc")) == "a9993e364706816aba3e25717850c26c9cd0d89d");
}

TEST_CASE("HMAC-SHA256 matches RFC 4231", "[crypto]") {
  // RFC 4231 §4.3 (test case 2) and §4.2 (test case 1).
  CHECK(to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")) ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  CHECK(to_hex(hmac_sha256(std::string(20, '\x0b'), "Hi There")) ==
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST_CASE("Digest streams to the same result as the one-shot functions", "[crypto]") {
  const std::string data(100000, 'x');
  for (const auto algorithm :
       {Digest::Algorithm::md5, Digest::Algorithm::sha1, Digest::Algorithm::sha256}) {
    Digest digest(algorithm);
    for (std::size_t at = 0; at < data.size(); at += 777)
      digest.update(std::string_view(data).substr(at, 777));
    const std::string result = digest.finish();
    switch (algorithm) {
      case Digest::Algorithm::md5:
        CHECK(result == md5(data));
        break;
      case Digest::Algorithm::sha1:
        CHECK(result == sha1(data));
        break;
      case Digest::Algorithm::sha256:
        CHECK(result == sha256(data));
        break;
    }
    CHECK_THROWS(digest.update("more"));
  }
  Digest moved_from(Digest::Algorithm::sha256);
  moved_from.update("ab");
  Digest moved_to = std::move(moved_from);
  moved_to.update("c");
  CHECK(moved_to.finish() == sha256("abc"));
}

TEST_CASE("CRCs match the catalogue check values and continue across calls", "[crypto]") {
  // Check value = CRC of "123456789" (Greg Cook's CRC catalogue).
  CHECK(crc32("123456789") == 0xcbf43926U);
  CHECK(crc32c("123456789") == 0xe3069283U);
  CHECK(crc64nvme("123456789") == 0xae8b14860a799888ULL);
  CHECK(crc32("") == 0U);
  CHECK(crc64nvme("") == 0U);
  // Split at every point, including inside the 8-byte slices.
  const std::string text = "The quick brown fox jumps over the lazy dog, 0123456789";
  for (std::size_t split = 0; split <= text.size(); ++split) {
    const std::string_view head = std::string_view(text).substr(0, split);
    const std::string_view tail = std::string_view(text).substr(split);
    CHECK(crc32(tail, crc32(head)) == crc32(text));
    CHECK(crc32c(tail, crc32c(head)) == crc32c(text));
    CHECK(crc64nvme(tail, crc64nvme(head)) == crc64nvme(text));
  }
  CHECK(crc32("The quick brown fox jumps over the lazy dog") == 0x414fa339U);
}

TEST_CASE("hex and base64 encode; malformed base64 is rejected", "[crypto]") {
  CHECK(to_hex(std::string("\x00\x7f\x80\xff", 4)) == "007f80ff");
  // RFC 4648 §10.
  for (const auto& [plain, encoded] :
       std::initializer_list<std::pair<std::string, std::string>>{{"", ""},
                                                                  {"f", "Zg=="},
                                                                  {"fo", "Zm8="},
                                                                  {"foo", "Zm9v"},
                                                                  {"foob", "Zm9vYg=="},
                                                                  {"fooba", "Zm9vYmE="},
                                                                  {"foobar", "Zm9vYmFy"}}) {
    CHECK(base64_encode(plain) == encoded);
    CHECK(base64_decode(encoded) == plain);
  }
  // A Content-MD5 value: 16 raw bytes.
  CHECK(base64_decode("1B2M2Y8AsgTpgAmY7PhCfg==") == md5(""));
  for (const std::string_view malformed :
       {"Zg=", "Zg", "Z===", "=Zg=", "Zm9v!A==", "Zm 9v", " Zm9v", "Zm9v\n", "Zg=a", "===="})
    CHECK_FALSE(base64_decode(malformed).has_value());
}

TEST_CASE("random helpers give the requested shape", "[crypto]") {
  const std::string hex = random_hex(16);
  CHECK(hex.size() == 32);
  CHECK(hex.find_first_not_of("0123456789abcdef") == std::string::npos);
  const std::string alnum = random_alnum(200);
  CHECK(alnum.size() == 200);
  CHECK(alnum.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") ==
        std::string::npos);
  CHECK(random_alnum(0).empty());
  CHECK(random_hex(16) != hex);
}

}  // namespace tfork::crypto
