internal import CCrypto
