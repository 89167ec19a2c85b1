//! Per-request costs of identity: admin JWT verification and session token
//! hashing (the database lookup is measured over HTTP by bench/http.sh), and
//! the production Argon2id parameters, which must take 50-500 ms.

use criterion::{Criterion, criterion_group, criterion_main};
use plaza_server::auth::jwt::{AdminPermission, JwtKeys};
use plaza_server::auth::password::Passwords;
use plaza_server::secrets::{hash_token, random_token};
use plaza_server::settings::AuthSettings;

fn jwt(c: &mut Criterion) {
    let keys = JwtKeys::from_secret(b"benchmark-secret-benchmark-secret-0123");
    let (token, _) = keys
        .mint(
            42,
            "admin",
            vec![AdminPermission::Read, AdminPermission::Write],
            3600,
        )
        .expect("mint");
    c.bench_function("admin_jwt_verify", |b| {
        b.iter(|| keys.verify(&token).expect("valid"))
    });
}

fn session_token(c: &mut Criterion) {
    let token = random_token();
    c.bench_function("session_token_hash", |b| b.iter(|| hash_token(&token)));
}

fn password_hash(c: &mut Criterion) {
    let defaults = AuthSettings::default();
    let passwords = Passwords::new(
        defaults.password_hash_memory_kib,
        defaults.password_hash_iterations,
        1,
        defaults.password_hashing_limits().expect("limits"),
    )
    .expect("parameters");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let mut group = c.benchmark_group("argon2id_default_parameters");
    group.sample_size(10);
    group.bench_function("hash", |b| {
        b.iter(|| {
            runtime
                .block_on(passwords.hash("correct horse battery staple"))
                .expect("hash")
        })
    });
    group.finish();
}

criterion_group!(benches, jwt, session_token, password_hash);
criterion_main!(benches);
