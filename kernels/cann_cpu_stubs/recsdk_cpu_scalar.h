// Declaration-only (README.md): the shape the CPU library's narrow float types have for a
// type-check: constructible from and convertible to the built-in arithmetic types, with the
// arithmetic and comparison operators. Members are declared, never defined.
#ifndef RECSDK_CANN_CPU_STUBS_RECSDK_CPU_SCALAR_H
#define RECSDK_CANN_CPU_STUBS_RECSDK_CPU_SCALAR_H

#include <cstdint>

namespace recsdk_cpu_stub {

template <typename Storage, int Kind>
struct Scalar {
    Storage bits;
    Scalar() = default;
    Scalar(float v);
    Scalar(double v);
    Scalar(int8_t v);
    Scalar(uint8_t v);
    Scalar(int16_t v);
    Scalar(uint16_t v);
    Scalar(int32_t v);
    Scalar(uint32_t v);
    Scalar(int64_t v);
    Scalar(uint64_t v);
    Scalar(bool v);
    operator float() const;
    explicit operator double() const;
    explicit operator int8_t() const;
    explicit operator uint8_t() const;
    explicit operator int16_t() const;
    explicit operator uint16_t() const;
    explicit operator int32_t() const;
    explicit operator uint32_t() const;
    explicit operator int64_t() const;
    explicit operator uint64_t() const;
    explicit operator bool() const;
    float ToFloat() const;
    Scalar& operator+=(const Scalar& o);
    Scalar& operator-=(const Scalar& o);
    Scalar& operator*=(const Scalar& o);
    Scalar& operator/=(const Scalar& o);
    Scalar operator-() const;
    friend Scalar operator+(const Scalar& a, const Scalar& b);
    friend Scalar operator-(const Scalar& a, const Scalar& b);
    friend Scalar operator*(const Scalar& a, const Scalar& b);
    friend Scalar operator/(const Scalar& a, const Scalar& b);
    friend bool operator==(const Scalar& a, const Scalar& b);
    friend bool operator!=(const Scalar& a, const Scalar& b);
    friend bool operator<(const Scalar& a, const Scalar& b);
    friend bool operator<=(const Scalar& a, const Scalar& b);
    friend bool operator>(const Scalar& a, const Scalar& b);
    friend bool operator>=(const Scalar& a, const Scalar& b);
};

template <int Kind>
using Scalar16 = Scalar<uint16_t, Kind>;
template <int Kind>
using Scalar8 = Scalar<uint8_t, Kind>;

}  // namespace recsdk_cpu_stub

#endif  // RECSDK_CANN_CPU_STUBS_RECSDK_CPU_SCALAR_H
