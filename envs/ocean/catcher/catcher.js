// catcher: move the basket (LEFT/RIGHT) under the falling fruit. +1 per catch, a miss costs a
// life (3). Catching 20 wins. Written for puffgpu's JS envs (p5.js style + the RL contract).
let basket, fruit, score, lives, gameState, speed;

function setup() {
  createCanvas(400, 400);
}

function resetGame(seed) {
  basket = { x: 200, w: 80, h: 16, y: 370 };
  score = 0;
  lives = 3;
  gameState = 'PLAYING';
  speed = 4;
  dropFruit();
}

function dropFruit() {
  fruit = { x: random(30, 370), y: 20, r: 14 };
}

function draw() {
  background(18, 24, 48);
  if (gameState === 'PLAYING') {
    if (keyIsDown(LEFT_ARROW)) basket.x -= 9;
    if (keyIsDown(RIGHT_ARROW)) basket.x += 9;
    basket.x = constrain(basket.x, basket.w / 2, width - basket.w / 2);
    fruit.y += speed;
    if (fruit.y + fruit.r >= basket.y && fruit.y - fruit.r <= basket.y + basket.h &&
        abs(fruit.x - basket.x) <= basket.w / 2 + fruit.r / 2) {
      score += 1;
      speed = min(speed + 0.25, 9);
      if (score >= 20) gameState = 'WIN';
      dropFruit();
    } else if (fruit.y - fruit.r > height) {
      lives -= 1;
      if (lives <= 0) gameState = 'GAMEOVER';
      dropFruit();
    }
  }
  noStroke();
  fill(250, 80, 60);
  circle(fruit.x, fruit.y, fruit.r * 2);
  fill(240, 200, 60);
  rectMode(CENTER);
  rect(basket.x, basket.y + basket.h / 2, basket.w, basket.h);
  rectMode(CORNER);
  fill(90, 200, 120);
  for (let i = 0; i < lives; i++) rect(10 + i * 22, 8, 16, 16);
}

function getGameState() {
  return { score: score, lives: lives, gameState: gameState };
}
